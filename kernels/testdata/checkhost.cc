// checkhost: kernels/harness/check.cuh compiled for the host, driven by
// kernels/check_test.go over a pipe to compare the device checker's
// arithmetic with the Go reference without a GPU.
//
// Each request is one line of text, a command and decimal arguments, then
// for some commands raw little-endian input; each answer is raw bytes.
//
//   gen DTYPE KIND SEED RANK ITER FIRST COUNT
//       -> COUNT inputs of RANK (2 or 4 bytes each)
//   expect DTYPE OP ORDER KIND NRANKS SEED ITER FIRST COUNT
//       -> COUNT records {u32 bit_exact, u32 bits, f64 value, f64 bound}
//   check DTYPE OP ORDER KIND NRANKS SEED ITER FIRST COUNT, then COUNT outputs
//       -> u64 wrong, u64 listed, then listed records {u64 index, u32 got,
//          u32 want, f64 ref} of the lowest wrong indices (at most kList)
//   convert WHAT COUNT, then COUNT u32
//       -> COUNT u32: WHAT is f16 or bf16 (float32 bits to dtype bits) or
//          f16tof32 (f16 bits to float32 bits)
//   digest
//       -> u64 f16, u64 bf16: FNV-1a over the conversions of all 2^32
//          float32 bit patterns, in order (the exhaustive test)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "harness/check.cuh"

namespace ac = artest::check;

namespace {

// Most wrong elements a check answer lists: more than reference.MaxReported.
constexpr uint64_t kList = 64;

void put(const void* p, size_t n) {
  if (fwrite(p, 1, n, stdout) != n) {
    perror("checkhost: write");
    exit(1);
  }
}

void get(void* p, size_t n) {
  if (fread(p, 1, n, stdin) != n) {
    fprintf(stderr, "checkhost: short read of %zu bytes\n", n);
    exit(1);
  }
}

uint32_t elem_size(uint32_t dtype) { return dtype == DTYPE_F32 ? 4u : 2u; }

uint64_t fnv(uint64_t h, uint32_t v) {
  for (int i = 0; i < 4; ++i) {
    h ^= (v >> (8 * i)) & 0xffu;
    h *= 0x100000001b3ull;  // the 64-bit FNV prime
  }
  return h;
}

}  // namespace

int main() {
  char line[512];
  while (fgets(line, sizeof line, stdin) != nullptr) {
    char cmd[32];
    unsigned long long v[9] = {};
    const int n = sscanf(line, "%31s %llu %llu %llu %llu %llu %llu %llu %llu %llu", cmd, &v[0], &v[1], &v[2], &v[3],
                         &v[4], &v[5], &v[6], &v[7], &v[8]);
    if (n < 1) continue;
    if (strcmp(cmd, "gen") == 0 && n == 8) {
      const uint32_t dtype = v[0], kind = v[1], rank = v[3];
      const uint64_t key = ac::elem_key(v[2], v[4]), first = v[5], count = v[6];
      const ac::Scheme s = ac::scheme_of(kind, dtype);
      for (uint64_t i = 0; i < count; ++i) {
        const uint32_t b = ac::input_bits(dtype, s, key, rank, first + i);
        put(&b, elem_size(dtype));
      }
    } else if ((strcmp(cmd, "expect") == 0 || strcmp(cmd, "check") == 0) && n == 10) {
      const uint32_t dtype = v[0], op = v[1], order = v[2], kind = v[3], nranks = v[4];
      const uint64_t first = v[7], count = v[8];
      const ac::Spec sp = ac::make_spec(v[5], v[6], kind, dtype, op, order, nranks);
      if (cmd[0] == 'e') {
        for (uint64_t i = 0; i < count; ++i) {
          const ac::Expect e = ac::expect(sp, first + i);
          const uint32_t head[2] = {e.bit_exact ? 1u : 0u, e.bits};
          put(head, sizeof head);
          put(&e.value, 8);
          put(&e.bound, 8);
        }
      } else {
        std::vector<unsigned char> got(count * elem_size(dtype));
        get(got.data(), got.size());
        uint64_t wrong = 0;
        std::vector<unsigned char> list;
        for (uint64_t i = 0; i < count; ++i) {
          uint32_t g = 0, want;
          double ref;
          memcpy(&g, &got[i * elem_size(dtype)], elem_size(dtype));
          if (ac::check_elem(sp, first + i, g, &want, &ref)) continue;
          if (wrong++ < kList) {
            const uint64_t index = first + i;
            const size_t at = list.size();
            list.resize(at + 24);
            memcpy(&list[at], &index, 8);
            memcpy(&list[at + 8], &g, 4);
            memcpy(&list[at + 12], &want, 4);
            memcpy(&list[at + 16], &ref, 8);
          }
        }
        const uint64_t listed = list.size() / 24;
        put(&wrong, 8);
        put(&listed, 8);
        put(list.data(), list.size());
      }
    } else if (strcmp(cmd, "convert") == 0) {
      char what[32];
      unsigned long long count = 0;
      if (sscanf(line, "%*s %31s %llu", what, &count) != 2) {
        fprintf(stderr, "checkhost: bad request: %s", line);
        return 2;
      }
      std::vector<uint32_t> in(count), out(count);
      get(in.data(), 4 * count);
      for (uint64_t i = 0; i < count; ++i) {
        if (strcmp(what, "f16") == 0) {
          out[i] = ac::f16_from_f32(in[i]);
        } else if (strcmp(what, "bf16") == 0) {
          out[i] = ac::bf16_from_f32(in[i]);
        } else if (strcmp(what, "f16tof32") == 0) {
          out[i] = ac::f32_bits(ac::f16_to_f32(in[i]));
        } else {
          fprintf(stderr, "checkhost: unknown conversion %s\n", what);
          return 2;
        }
      }
      put(out.data(), 4 * count);
    } else if (strcmp(cmd, "digest") == 0) {
      uint64_t h[2] = {0xcbf29ce484222325ull, 0xcbf29ce484222325ull};  // the FNV-1a offset basis
      for (uint64_t b = 0; b <= 0xffffffffull; ++b) {
        h[0] = fnv(h[0], ac::f16_from_f32(static_cast<uint32_t>(b)));
        h[1] = fnv(h[1], ac::bf16_from_f32(static_cast<uint32_t>(b)));
      }
      put(h, sizeof h);
    } else {
      fprintf(stderr, "checkhost: bad request: %s", line);
      return 2;
    }
    fflush(stdout);
  }
  return 0;
}
