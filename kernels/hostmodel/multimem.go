package hostmodel

import "fmt"

// multimem is the host model of the multimem variant (issue 5): not written yet.
// The variant is not in kernels.Registry until it is, so no case reaches it.
func (k *kernel) multimem(b int) error {
	return fmt.Errorf("host model of multimem: not implemented")
}
