package cuda

import (
	"errors"
	"fmt"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/coresident"
	cu "github.com/artest/artest/internal/cudadrv"
)

// capKey is what a kernel's grid cap depends on.
type capKey struct {
	name            string
	threads, shared int
	late            bool
}

type gridCap struct {
	blocks int
	from   string
}

// RanksPerGPU is backend.Sharer's.
func (b *Backend) RanksPerGPU() int { return max(b.share.PerGPU, 1) }

// GridCap is backend.Sharer's: the driver's occupancy for l's kernel at
// l.Threads with its shared memory, this GPU's multiprocessors (or fewer,
// when MPS limits this context), split over the ranks that share a GPU.
func (b *Backend) GridCap(l *backend.Launch, late bool) (int, string, error) {
	if l.Variant.External != nil {
		// Its grid is the plugin's; the runner does not cap it (capGrid).
		return 0, "", fmt.Errorf("%s launches its own grid: artest cannot cap it", l.Variant.Name)
	}
	if why := l.Unresolved(); why != "" {
		return 0, "", errors.New(why)
	}
	f, shared, err := b.kernel(l)
	if err != nil {
		return 0, "", err
	}
	k := capKey{l.KernelName(), l.Threads, shared, late}
	if c, ok := b.caps[k]; ok {
		return c.blocks, c.from, nil
	}
	per, err := b.d.OccupancyMaxActiveBlocks(f, l.Threads, shared)
	if err != nil {
		return 0, "", fmt.Errorf("kernel %s at %d threads: %w", k.name, l.Threads, err)
	}
	ctxSMs, err := b.d.ContextSMs()
	if err != nil && !errors.Is(err, cu.ErrSymbolMissing) {
		return 0, "", err
	}
	if b.green != 0 {
		// This rank's grid runs on its own partition.
		ctxSMs = b.greenSMs
	}
	lim := coresident.Limits{PerSM: per, SMs: b.sms, ContextSMs: ctxSMs, Ranks: b.RanksPerGPU(), Late: late}
	c := gridCap{lim.Blocks(), fmt.Sprintf("%s at %d threads, %d B shared: %s", k.name, l.Threads, shared, lim)}
	b.caps[k] = c
	return c.blocks, c.from, nil
}
