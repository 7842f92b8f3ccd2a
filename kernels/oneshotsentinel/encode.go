package oneshotsentinel

// Staging holds every element as the complement of its bits, so that
// all-zero staging reads as empty (oneshot_sentinel.cuh holds the CUDA
// twins). All ones, the one pattern whose complement is zero, is a NaN in
// f32, f16 and bf16; it is sent as all ones but the sign bit, another NaN,
// which no sum, max or min tells apart from it.

// Encode16 is a 16-bit element as staging holds it: never zero.
func Encode16(bits uint16) uint16 {
	if c := ^bits; c != 0 {
		return c
	}
	return 0x8000
}

// Encode32 is a 32-bit element as staging holds it: never zero.
func Encode32(bits uint32) uint32 {
	if c := ^bits; c != 0 {
		return c
	}
	return 0x80000000
}

// EncodeWord is one 32-bit word of staging for elements of elem bytes
// (2: two elements, the first in the low half; 4: one).
func EncodeWord(w uint32, elem int64) uint32 {
	if elem == 4 {
		return Encode32(w)
	}
	return uint32(Encode16(uint16(w))) | uint32(Encode16(uint16(w>>16)))<<16
}

// WordFull reports whether every element of a staging word is written.
func WordFull(w uint32, elem int64) bool {
	if elem == 4 {
		return w != 0
	}
	return w&0xffff != 0 && w>>16 != 0
}

// DecodeWord is the data of a full staging word.
func DecodeWord(w uint32) uint32 { return ^w }
