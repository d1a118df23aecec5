// ember npy-diff A.npy B.npy: whether two .npy arrays agree within a
// tolerance (the same rule as `ember compare`, ember/Compare.h), and where
// they differ most. Exit 0 when they agree, 1 when they do not.
#include <iostream>

#include "Commands.h"
#include "Tool.h"
#include "ember/Compare.h"
#include "ember/Npy.h"

namespace ember::cli {

int npyDiffCommand(const std::vector<std::string>& args) {
  std::string expectedPath, gotPath;
  std::optional<double> rtol, atol;
  OptionParser parser("ember npy-diff", "EXPECTED.npy GOT.npy [--rtol R] [--atol A]",
                      "Compares two .npy arrays: same element kind and shape, then every element\n"
                      "within atol + rtol * max|EXPECTED| (integers and bools: within atol, exact by\n"
                      "default). Prints the largest difference and where it is; exits 0 when the\n"
                      "arrays agree and 1 when they do not.");
  parser.addPositional("EXPECTED.npy", &expectedPath, "the reference array");
  parser.addPositional("GOT.npy", &gotPath, "the array to check");
  parser.addNonNegativeNumber("--rtol", "R", &rtol, "relative tolerance for floats (default 1e-4)");
  parser.addNonNegativeNumber("--atol", "A", &atol, "absolute tolerance (default 0)");
  if (auto status = parser.parse(args)) return *status;

  auto expected = readNpy(expectedPath);
  if (!expected) return fail(expected.error());
  auto got = readNpy(gotPath);
  if (!got) return fail(got.error());
  Tolerance tolerance;
  if (rtol) tolerance.rtol = *rtol;
  if (atol) tolerance.atol = *atol;
  const TensorDiff diff = diffTensors(*got, *expected, tolerance);
  if (!diff.typeMismatch.empty())
    return fail(gotPath + " is " + got->type().str() + ", " + expectedPath + " is " + expected->type().str());
  std::cout << got->type().str() << ": max abs error " << diff.maxAbsError << ", max rel error "
            << diff.maxRelError;
  if (diff.worstIndex >= 0)
    std::cout << " at " << TensorDiff::coordinates(diff.worstIndex, got->type().dims) << " (expected "
              << diff.expectedAtWorst << ", got " << diff.gotAtWorst << ")";
  std::cout << "\n";
  if (diff.withinTolerance) {
    std::cout << "npy-diff: the arrays agree (rtol " << tolerance.rtol << ", atol " << tolerance.atol
              << ")\n";
    return kExitSuccess;
  }
  std::cout << "npy-diff: " << diff.numBeyondTolerance << " of " << got->type().numElements()
            << " elements differ beyond rtol " << tolerance.rtol << ", atol " << tolerance.atol << "\n";
  return kExitFailure;
}

}  // namespace ember::cli
