// Writes valid payloads of every type (with NaN/Inf, tails, checksums) as the fuzzer's seed corpus.
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "octet/codec.h"

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  int k = 0;
  for (octet::DataType type : octet::all_data_types()) {
    for (size_t n : {0, 1, 65, 200}) {
      std::vector<float> x(n);
      for (size_t i = 0; i < n; ++i) x[i] = std::sin(float(i)) * (i % 7 + 1);
      if (type == octet::DataType::kDynamicUnsigned)
        for (auto& v : x) v = std::fabs(v);
      if (n > 3) x[2] = NAN, x[3] = -INFINITY;
      octet::CodecOptions o;
      o.type = type;
      o.block_size = 64;
      o.checksum = (n % 2) == 1;
      const std::vector<uint8_t> p = octet::encode(x, o);
      std::ofstream(dir + "/seed" + std::to_string(k++), std::ios::binary)
          .write(reinterpret_cast<const char*>(p.data()), static_cast<std::streamsize>(p.size()));
    }
  }
  return 0;
}
