// Builds of liboctet side by side in one process, for a decode change too small to see on a
// machine shared with other work (where one build's rate moved 10-15% between runs): each build is
// loaded into a link namespace of its own (dlmopen), and every repetition decodes the same payload
// once with every build and runs the streaming bound once, in a shuffled order, so that all of
// them meet the same phases of the machine's load and the same cache state.
//
//   octet_codec_ab N BLOCK REPS LIB_DIR...
//
// N elements of a normal distribution, encoded once (dynamic tree, BLOCK: 0 for the type's
// default) by the linked library; LIB_DIR: a directory holding a build's liboctet.so (the first is
// the baseline). The output is 16 bytes past a 64-byte boundary, as a std::vector's from glibc.
// $OCTET_SIMD_TARGET restricts every build (and the bound) to that SIMD target. Prints the bound's
// best rate, then per build its best rate, its fraction of the bound and its ratio to the first
// build's rate. Run it several times: the physical pages a run gets shift its figures by a few
// percent, and the ratio of one run to the next shows how far.
#include <dlfcn.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench_support.h"
#include "octet/codec.h"
#include "octet/octet_c.h"

namespace {

using DecodeFn = octet_status (*)(const uint8_t*, size_t, float*, size_t);

// N, BLOCK or REPS, in [least, most], or exit 2 with one line.
unsigned long long number(const char* text, const char* name, unsigned long long least,
                          unsigned long long most) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0' || errno != 0 || v < least || v > most || text[0] == '-') {
    std::fprintf(stderr, "octet_codec_ab: %s must be a whole number from %llu to %llu, not '%s'\n",
                 name, least, most, text);
    std::exit(2);
  }
  return v;
}

// LIB_DIR's octet_decode, from a namespace of its own, or exit 2 with one line.
DecodeFn load_decode(const std::string& dir) {
  const std::string path = dir + "/liboctet.so";
  void* lib = dlmopen(LM_ID_NEWLM, path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "octet_codec_ab: %s\n", dlerror());  // names the file and why
    std::exit(2);
  }
  auto fn = reinterpret_cast<DecodeFn>(dlsym(lib, "octet_decode"));
  if (fn == nullptr) {
    std::fprintf(stderr, "octet_codec_ab: %s has no octet_decode\n", path.c_str());
    std::exit(2);
  }
  return fn;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: octet_codec_ab N BLOCK REPS LIB_DIR...\n");
    return 2;
  }
  const size_t n = number(argv[1], "N", 64, size_t{1} << 32);
  const auto block = static_cast<uint32_t>(number(argv[2], "BLOCK", 0, UINT32_MAX));
  const auto reps = static_cast<int>(number(argv[3], "REPS", 1, INT_MAX));
  std::vector<std::string> dirs(argv + 4, argv + argc);
  std::vector<DecodeFn> decode;
  for (const std::string& dir : dirs) decode.push_back(load_decode(dir));
  octet_bench::check_simd_target_from_env();

  std::mt19937_64 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  octet::CodecOptions o;
  o.block_size = block;
  o.threads = 1;
  std::vector<uint8_t> payload;
  try {
    payload = octet::encode(x, o);
  } catch (const octet::Error& e) {
    std::fprintf(stderr, "octet_codec_ab: %s\n", e.what());
    return 2;
  }
  std::vector<float> storage(n + 32);
  const auto base = reinterpret_cast<uintptr_t>(storage.data());
  float* out = storage.data() + ((64 - base % 64) % 64 + 16) / sizeof(float);
  const std::vector<uint8_t> bytes(n, 1);

  const size_t runs = decode.size() + 1;  // every build, then the bound
  std::vector<double> best(runs, 1e30);
  std::vector<size_t> order(runs);
  for (size_t k = 0; k < runs; ++k) order[k] = k;
  for (int r = 0; r < reps; ++r) {
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t k : order) {
      bool decoded = true;
      const double s = octet_bench::seconds([&] {
        if (k < decode.size()) {
          decoded = decode[k](payload.data(), payload.size(), out, n) == OCTET_OK;
        } else {
          octet_bench::stream_decode(bytes.data(), out, n);
          asm volatile("" : : "r"(out) : "memory");
        }
      });
      if (!decoded) {
        std::fprintf(stderr, "octet_codec_ab: %s failed to decode\n", dirs[k].c_str());
        return 1;
      }
      best[k] = std::min(best[k], s);
    }
  }
  const double bound = best.back();
  std::printf("bound %.3f G/s (%s, %zu elements, %d repetitions)\n", n / bound / 1e9,
              octet::simd_target().c_str(), n, reps);
  for (size_t k = 0; k < decode.size(); ++k)
    std::printf("%s  %.3f G/s  of_bound %.3f  vs_first %.3f\n", dirs[k].c_str(), n / best[k] / 1e9,
                bound / best[k], best[0] / best[k]);
  return 0;
}
