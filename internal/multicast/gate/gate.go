// Package gate decides whether artest may create an NVLS multicast object.
//
// A multicast object (cuMulticastCreate) reserves NVSwitch resources for the
// whole node, and on shared machines it can take the host's GPUs out of
// service. So no multicast entry point is resolved, let alone called, unless
// Decide opened the gate; Decide is the only way to obtain a valid Permit
// (it is the only caller of cudadrv.GrantMulticast, which
// TestOnlyTheGateGrantsMulticast checks), and the CUDA wrapper
// (internal/cudadrv, EnableMulticast) refuses to resolve the multicast entry
// points without one.
//
// The gate opens only when all of these hold, checked in this order so that
// the cheap checks come first and the device is not even queried when the
// user did not ask:
//
//  1. the user passed --allow-multicast;
//  2. the environment does not turn NVLS off: NCCL_NVLS_ENABLE is unset, or
//     set to a value that reads as a non-zero integer (NCCL reads the
//     variable with strtol, so "0", "00" and text that is no number all mean
//     off, and all keep the gate closed);
//  3. the device reports CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED (a read of
//     a capability, which creates nothing).
//
// Whatever the answer, Decision.Reason says it in words for the report
// header and for every multimem case that is skipped.
package gate

import (
	"fmt"
	"strings"

	"github.com/artest/artest/internal/cudadrv"
)

// EnvNVLS is the NCCL variable users (and artest's Makefile, CI scripts and
// NCCL loader) set to 0 to keep NVLS, and with it multicast, off.
const EnvNVLS = "NCCL_NVLS_ENABLE"

// FlagName is the command-line flag that asks for multicast.
const FlagName = "--allow-multicast"

// Inputs are what the gate looks at.
type Inputs struct {
	// Flag: the user passed --allow-multicast.
	Flag bool
	// LookupEnv reads the environment (os.LookupEnv in production).
	LookupEnv func(string) (string, bool)
	// Supported reads the device's multicast capability. It is called only
	// after the flag and the environment allowed multicast.
	Supported func() (bool, error)
}

// Permit is the proof that the gate opened, what cudadrv.EnableMulticast
// takes. Its zero value is not valid, and only Decide makes a valid one.
// The type is internal/cudadrv's, so that the CUDA wrapper needs nothing from
// this package above it.
type Permit = cudadrv.MulticastPermit

// Decision is the gate's answer.
type Decision struct {
	Open   bool
	Reason string // why closed, or what made it open
	permit Permit
}

// Permit returns the permit of an open gate, or an error saying why the gate
// is closed.
func (d Decision) Permit() (Permit, error) {
	if !d.Open || !d.permit.Valid() {
		return Permit{}, fmt.Errorf("multicast is off: %s", d.Reason)
	}
	return d.permit, nil
}

// Closed is a closed decision: for callers that never evaluated the inputs,
// and for a gate that opened here but that something else rules out
// afterwards (another rank's closed gate, ranks on several nodes).
func Closed(reason string) Decision { return Decision{Reason: reason} }

// Decide evaluates the gate. See the package comment for the rules.
func Decide(in Inputs) Decision {
	if !in.Flag {
		return Closed(FlagName + " not given")
	}
	if in.LookupEnv != nil {
		if v, set := in.LookupEnv(EnvNVLS); set && !envEnables(v) {
			return Closed(fmt.Sprintf("%s=%q turns NVLS off (unset it or set it to 1 to allow multicast)", EnvNVLS, v))
		}
	}
	if in.Supported == nil {
		return Closed("no device to ask whether it supports multicast")
	}
	ok, err := in.Supported()
	if err != nil {
		return Closed(fmt.Sprintf("cannot read the device's multicast support: %v", err))
	}
	if !ok {
		return Closed("the device does not support multicast (CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED is 0)")
	}
	return Decision{
		Open:   true,
		Reason: fmt.Sprintf("%s given, %s not 0, device supports multicast", FlagName, EnvNVLS),
		permit: cudadrv.GrantMulticast(),
	}
}

// envEnables reports whether a set NCCL_NVLS_ENABLE value leaves NVLS on.
// NCCL parses it with strtol in base 0: leading blanks, an optional sign,
// then "0x" and hexadecimal digits, or "0" and octal digits, or decimal
// digits, stopping at the first character that does not fit; a value with
// no digits reads as 0. Only the zero-ness matters here, so any digit other
// than 0 in that prefix means on.
func envEnables(v string) bool {
	s := strings.TrimLeft(v, " \t\n\v\f\r")
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	digits := "0123456789"
	switch {
	case len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && strings.IndexByte(hexDigits, s[2]) >= 0:
		digits, s = hexDigits, s[2:]
	case s != "" && s[0] == '0':
		digits = "01234567"
	}
	for i := 0; i < len(s) && strings.IndexByte(digits, s[i]) >= 0; i++ {
		if s[i] != '0' {
			return true
		}
	}
	return false
}

const hexDigits = "0123456789abcdefABCDEF"
