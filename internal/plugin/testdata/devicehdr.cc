// devicehdr.cc: the number helpers of plugin/artest_device.h on the host,
// driven by devicehdr_test.go, which compares what they give with the Go
// reference. Built with g++ -std=c++17 as plain C++ (no __CUDACC__): the
// header's host paths are the ones a host plugin runs, and its integer
// arithmetic is the same on the GPU.
//
// One mode per run (argv[1]); numbers are little-endian binary, stdin to
// stdout:
//   decode            no input; for h = 0..65535: artest_f16_to_f32(h),
//                     artest_bf16_to_f32(h) (float bits, uint32 each)
//   encode            float bits (uint32) until EOF; per input:
//                     artest_f32_to_f16, artest_f32_to_bf16 (uint16 each)
//   extreme           pairs of float bits (uint32 a, b) until EOF; per pair:
//                     artest_max_f32(a, b), artest_min_f32(a, b) (uint32 each)
//   reduce D O N      dtype D (0 f32, 1 f16, 2 bf16), op O (0 sum, 1 max,
//                     2 min), N ranks; N dtype bits (uint32 each) per element
//                     until EOF, in rank order; per element the dtype bits
//                     (uint32) of acc = x0, acc = acc op x_r for r = 1..N-1
//                     in float, rounded once to D
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "artest_device.h"

namespace {

std::vector<uint32_t> read_words() {
	std::vector<uint32_t> in;
	uint32_t buf[4096];
	size_t n;
	while ((n = fread(buf, sizeof buf[0], sizeof buf / sizeof buf[0], stdin)) > 0)
		in.insert(in.end(), buf, buf + n);
	return in;
}

template <typename T>
void write_all(const std::vector<T> &out) {
	if (fwrite(out.data(), sizeof(T), out.size(), stdout) != out.size()) {
		perror("devicehdr: write");
		exit(1);
	}
}

float load(uint32_t dtype, uint32_t bits) {
	switch (dtype) {
	case ARTEST_F16: return artest_f16_to_f32((uint16_t)bits);
	case ARTEST_BF16: return artest_bf16_to_f32((uint16_t)bits);
	default: return artest_f32_from_bits(bits);
	}
}

uint32_t store(uint32_t dtype, float v) {
	switch (dtype) {
	case ARTEST_F16: return artest_f32_to_f16(v);
	case ARTEST_BF16: return artest_f32_to_bf16(v);
	default: return artest_f32_bits(v);
	}
}

} // namespace

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: devicehdr decode|encode|extreme|reduce D O N\n");
		return 2;
	}
	const char *mode = argv[1];
	if (strcmp(mode, "decode") == 0) {
		std::vector<uint32_t> out;
		for (uint32_t h = 0; h < 65536; h++) {
			out.push_back(artest_f32_bits(artest_f16_to_f32((uint16_t)h)));
			out.push_back(artest_f32_bits(artest_bf16_to_f32((uint16_t)h)));
		}
		write_all(out);
	} else if (strcmp(mode, "encode") == 0) {
		std::vector<uint32_t> in = read_words();
		std::vector<uint16_t> out;
		out.reserve(2 * in.size());
		for (uint32_t x : in) {
			float f = artest_f32_from_bits(x);
			out.push_back(artest_f32_to_f16(f));
			out.push_back(artest_f32_to_bf16(f));
		}
		write_all(out);
	} else if (strcmp(mode, "extreme") == 0) {
		std::vector<uint32_t> in = read_words();
		std::vector<uint32_t> out;
		for (size_t i = 0; i + 1 < in.size(); i += 2) {
			float a = artest_f32_from_bits(in[i]), b = artest_f32_from_bits(in[i + 1]);
			out.push_back(artest_f32_bits(artest_max_f32(a, b)));
			out.push_back(artest_f32_bits(artest_min_f32(a, b)));
		}
		write_all(out);
	} else if (strcmp(mode, "reduce") == 0 && argc == 5) {
		const uint32_t dtype = (uint32_t)atoi(argv[2]), op = (uint32_t)atoi(argv[3]), n = (uint32_t)atoi(argv[4]);
		if (n == 0)
			return 2;
		std::vector<uint32_t> in = read_words();
		std::vector<uint32_t> out;
		for (size_t e = 0; e + n <= in.size(); e += n) {
			float acc = load(dtype, in[e]);
			for (uint32_t r = 1; r < n; r++) {
				float x = load(dtype, in[e + r]);
				switch (op) {
				case ARTEST_MAX: acc = artest_max_f32(acc, x); break;
				case ARTEST_MIN: acc = artest_min_f32(acc, x); break;
				default: acc += x;
				}
			}
			out.push_back(store(dtype, acc));
		}
		write_all(out);
	} else {
		fprintf(stderr, "devicehdr: unknown mode %s\n", mode);
		return 2;
	}
	return fflush(stdout) == 0 ? 0 : 1;
}
