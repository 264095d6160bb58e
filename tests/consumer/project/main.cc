#include <cstdio>
#include <vector>

#include "octet/codec.h"
#include "octet/config.h"

int main() {
  std::vector<float> x = {1.0f, -0.5f, 0.25f, 3.0f};
  const std::vector<float> y = octet::decode(octet::encode(x));
  if (y.size() != x.size() || y[3] != 3.0f) return 1;
  std::printf("consumer: Octet %s round trip ok\n", OCTET_VERSION_STRING);
  return 0;
}
