// npy_allclose EXPECTED.npy GOT.npy [RTOL ATOL]: exit 0 when both arrays have
// the same type and |got - expected| <= atol + rtol * |expected| everywhere.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "ember/Npy.h"

int main(int argc, char** argv) {
  if (argc != 3 && argc != 5) {
    std::fprintf(stderr, "usage: npy_allclose EXPECTED.npy GOT.npy [RTOL ATOL]\n");
    return 2;
  }
  double rtol = argc == 5 ? std::atof(argv[3]) : 1e-4, atol = argc == 5 ? std::atof(argv[4]) : 1e-5;
  auto expected = ember::readNpy(argv[1]);
  auto got = ember::readNpy(argv[2]);
  if (!expected || !got) {
    std::fprintf(stderr, "npy_allclose: %s\n", (!expected ? expected : got).error().message().c_str());
    return 1;
  }
  if (expected->type() != got->type()) {
    std::fprintf(stderr, "npy_allclose: %s is %s, expected %s\n", argv[2], got->type().str().c_str(),
                 expected->type().str().c_str());
    return 1;
  }
  for (int64_t i = 0; i < expected->type().numElements(); ++i) {
    double e = expected->elementAsDouble(i), g = got->elementAsDouble(i);
    if (!(std::fabs(e - g) <= atol + rtol * std::fabs(e))) {
      std::fprintf(stderr, "npy_allclose: %s differs at index %lld: expected %.9g, got %.9g\n", argv[2],
                   static_cast<long long>(i), e, g);
      return 1;
    }
  }
  std::printf("npy_allclose: %lld values match\n", static_cast<long long>(expected->type().numElements()));
  return 0;
}
