package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// WriteJSON writes r as indented JSON. Field order is the model's, maps are
// sorted by key, and timing numbers are rounded to what the measurement can
// resolve (times to 1 ns, wall seconds to 1 us, bandwidths and speed-ups to
// five significant digits) so reports diff cleanly. Got, Want and ULP of a
// mismatch are written exactly; non-finite ones are written as the strings
// "NaN", "+Inf" and "-Inf", which JSON numbers cannot hold. r is not changed.
func WriteJSON(w io.Writer, r *Report) error {
	out := *r
	out.Cases = make([]Case, len(r.Cases))
	for i, c := range r.Cases {
		out.Cases[i] = rounded(c)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	// Reasons and details quote kernel names and comparisons like "<" and
	// "&"; HTML escaping would make them unreadable for no gain.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&out); err != nil {
		return fmt.Errorf("write JSON report: %w", err)
	}
	return nil
}

// ErrTrailingData: a report file holds something after its report.
var ErrTrailingData = errors.New("data after the report")

// ReadJSON reads a report WriteJSON wrote. Unknown fields are ignored so that
// a newer artest's reports can still be compared by an older one.
func ReadJSON(r io.Reader) (*Report, error) {
	var rep Report
	dec := json.NewDecoder(r)
	if err := dec.Decode(&rep); err != nil {
		return nil, fmt.Errorf("read JSON report: %w", err)
	}
	// One report a file: a second document (or anything) after it would
	// otherwise be read by nobody, and a gate would judge the first alone.
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("read JSON report: %w (at byte %d): one report a file", ErrTrailingData, dec.InputOffset())
	}
	return &rep, nil
}

// rounded is c with its measurements rounded as WriteJSON documents.
func rounded(c Case) Case {
	c.TimeUS = roundDecimals(c.TimeUS, 3)
	c.NCCLTimeUS = roundDecimals(c.NCCLTimeUS, 3)
	c.NCCLBestTimeUS = roundDecimals(c.NCCLBestTimeUS, 3)
	c.SpeedupVsBest = roundSignificant(c.SpeedupVsBest, 5)
	c.FieldBestTimeUS = roundDecimals(c.FieldBestTimeUS, 3)
	c.FieldBestGain = roundSignificant(c.FieldBestGain, 5)
	c.Seconds = roundDecimals(c.Seconds, 6)
	c.AlgBW = roundSignificant(c.AlgBW, 5)
	c.BusBW = roundSignificant(c.BusBW, 5)
	c.Speedup = roundSignificant(c.Speedup, 5)
	return c
}

// Derived timing values that are not finite mean "not measured" (a division
// by a zero time upstream); they become 0, which the model already reads as
// absent, instead of failing the whole report.
func roundDecimals(v float64, decimals int) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	scale := math.Pow(10, float64(decimals))
	return math.Round(v*scale) / scale
}

func roundSignificant(v float64, digits int) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	rounded, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', digits, 64), 64)
	if err != nil {
		return v
	}
	return rounded
}

// jsonFloat is a float64 that survives JSON when it is not finite: a kernel
// that writes garbage produces NaN and Inf values, and those are exactly the
// mismatches a report must not lose.
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return []byte(`"NaN"`), nil
	case math.IsInf(v, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Inf"`), nil
	}
	return json.Marshal(v)
}

func (f *jsonFloat) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		switch s {
		case "NaN":
			*f = jsonFloat(math.NaN())
		case "+Inf", "Inf":
			*f = jsonFloat(math.Inf(1))
		case "-Inf":
			*f = jsonFloat(math.Inf(-1))
		default:
			return fmt.Errorf("float %q: want a number, \"NaN\", \"+Inf\" or \"-Inf\"", s)
		}
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = jsonFloat(v)
	return nil
}

// The mirrors below shadow the float fields of the model types with
// jsonFloat; embedding the model type (converted to a method-less copy) keeps
// every other field, including ones added later, without listing them here.
// encoding/json lists the shadowing fields after the embedded ones.

type plainMismatch Mismatch

type mismatchJSON struct {
	plainMismatch
	Got  jsonFloat `json:"got"`
	Want jsonFloat `json:"want"`
	ULP  jsonFloat `json:"ulp"`
}

// MarshalJSON writes non-finite Got, Want and ULP as strings.
func (m Mismatch) MarshalJSON() ([]byte, error) {
	return json.Marshal(mismatchJSON{plainMismatch(m), jsonFloat(m.Got), jsonFloat(m.Want), jsonFloat(m.ULP)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (m *Mismatch) UnmarshalJSON(b []byte) error {
	var j mismatchJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*m = Mismatch(j.plainMismatch)
	m.Got, m.Want, m.ULP = float64(j.Got), float64(j.Want), float64(j.ULP)
	return nil
}

type plainRankFailure RankFailure

type rankFailureJSON struct {
	plainRankFailure
	WorstULP jsonFloat `json:"worst_ulp,omitempty"`
}

// MarshalJSON writes a non-finite WorstULP as a string.
func (f RankFailure) MarshalJSON() ([]byte, error) {
	return json.Marshal(rankFailureJSON{plainRankFailure(f), jsonFloat(f.WorstULP)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (f *RankFailure) UnmarshalJSON(b []byte) error {
	var j rankFailureJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*f = RankFailure(j.plainRankFailure)
	f.WorstULP = float64(j.WorstULP)
	return nil
}
