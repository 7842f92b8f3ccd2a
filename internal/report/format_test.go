package report

import (
	"math"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFitNumber(t *testing.T) {
	tests := []struct {
		v     float64
		width int
		want  string
	}{
		{6.125, 9, "6.12"},
		{12345.678, 9, "12345.68"},
		{1234567.8, 9, "1234567.8"},
		{12345678.9, 9, "12345679"},
		{1234567890.1, 9, "1234567890"}, // too wide even without decimals: all digits kept
		{math.Inf(1), 9, "+Inf"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, fitNumber(tt.v, tt.width, 2), "%v", tt.v)
	}
}

func TestHostsLine(t *testing.T) {
	tests := []struct {
		hosts []string
		want  string
	}{
		{nil, "no hosts reported"},
		{[]string{"a"}, "1 host: a (rank 0)"},
		{[]string{"a", "a", "a", "a"}, "1 host: a (ranks 0-3)"},
		{[]string{"a", "b", "a", "b", "a"}, "2 hosts: a (ranks 0,2,4), b (ranks 1,3)"},
		{[]string{"b", "b", "a", "a", "b", ""}, "3 hosts: b (ranks 0-1,4), a (ranks 2-3), (unnamed) (rank 5)"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, hostsLine(tt.hosts))
	}
}

func TestShellCommand(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"artest", "-b", "1K", "--variants=oneshot,twoshot"}, "artest -b 1K --variants=oneshot,twoshot"},
		{[]string{"artest", "--note", "two words"}, "artest --note 'two words'"},
		{[]string{"artest", "", "$HOME", "it's"}, `artest '' '$HOME' 'it'\''s'`},
		// A line break stays on the line as bash's $'...' escape.
		{[]string{"artest", "--shm-dir", "a\nb", "it's\t\\"}, `artest --shm-dir $'a\nb' $'it\'s\t\\'`},
	}
	for _, tt := range tests {
		got := ShellCommand(tt.args)
		require.Equal(t, tt.want, got)
		require.NotContains(t, got, "\n")
	}
	// bash reads each quoted word back as it was.
	if _, err := exec.LookPath("bash"); err == nil {
		args := []string{"a\nb", "c'd\te\\f", "\x01"}
		out, err := exec.Command("bash", "-c", "printf '%s\\0' "+ShellCommand(args)).Output()
		require.NoError(t, err)
		require.Equal(t, strings.Join(args, "\x00")+"\x00", string(out))
	}
}

func TestFormatBits(t *testing.T) {
	require.Equal(t, "0x3f800000", formatBits(0x3f800000, "f32"))
	require.Equal(t, "0x0001", formatBits(1, "bf16"))
	require.Equal(t, "0x3c00", formatBits(0x3c00, "f16"))
	require.Equal(t, "0x5", formatBits(5, "i8"))
}

func TestFailureReason(t *testing.T) {
	tests := []struct {
		name string
		c    Case
		want string
	}{
		{"reason wins", Case{Verdict: Fail, Reason: "bad\nsecond", Failures: []RankFailure{{Rank: 1}}}, "bad"},
		{"from rank failures", Case{Verdict: Fail, Failures: []RankFailure{{Rank: 1, Kind: "trace", Detail: "ran twoshot"}, {Rank: 2}}}, "rank 1 trace: ran twoshot (and 1 more rank)"},
		{"nothing given", Case{Verdict: Fail}, "no reason given"},
		{"unknown verdict", Case{Verdict: "", Reason: "hm"}, `unknown verdict "": hm`},
		{"hung is a known failure", Case{Verdict: Hung, Reason: "hang in case x: rank 1 gave up"}, "hang in case x: rank 1 gave up"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, failureReason(&tt.c))
		})
	}
}
