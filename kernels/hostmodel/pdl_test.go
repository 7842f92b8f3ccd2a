package hostmodel_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/artest/artest/kernels/hostmodel"
	"github.com/artest/artest/kernels/hostmodel/hostmodeltest"

	"github.com/stretchr/testify/require"
)

// The model producer writes nothing until something waits for it, then the
// whole input at once: a kernel that waits sees all of it, one that does
// not sees none of it.
func TestProducerWritesOnlyWhenWaitedFor(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait func(p *hostmodel.Producer) error
	}{
		{"pdl_wait", func(p *hostmodel.Producer) error { return p.Wait(nil) }},
		{"the stream's next operation", func(p *hostmodel.Producer) error { return p.Finish() }},
		{"wait twice", func(p *hostmodel.Producer) error {
			if err := p.Wait(nil); err != nil {
				return err
			}
			return p.Finish()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m hostmodeltest.Memory
			const n = 4096
			dst, src := m.Alloc(n), m.Alloc(n)
			copy(m.Bytes(src, n), bytes.Repeat([]byte{0x5a}, n))
			p := hostmodel.NewProducer(&m, dst, src, n)
			time.Sleep(5 * time.Millisecond) // room for a producer that would not hold
			require.Equal(t, make([]byte, n), m.Bytes(dst, n), "written before anyone waited")
			require.NoError(t, tc.wait(p))
			require.Equal(t, m.Bytes(src, n), m.Bytes(dst, n))
		})
	}
}

func TestProducerBadAddressIsAnError(t *testing.T) {
	var m hostmodeltest.Memory
	p := hostmodel.NewProducer(&m, 1<<hostmodeltest.WindowShift, 2<<hostmodeltest.WindowShift, 16)
	require.ErrorContains(t, p.Wait(nil), "host pdl producer")
	require.ErrorContains(t, p.Finish(), "host pdl producer")
}
