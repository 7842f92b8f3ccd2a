package hostmodel

import "fmt"

// oneshotCpasync is the host model of the cpasync variant (issue 4): not written yet.
// The variant is not in kernels.Registry until it is, so no case reaches it.
func (k *kernel) oneshotCpasync(b int) error {
	return fmt.Errorf("host model of cpasync: not implemented")
}
