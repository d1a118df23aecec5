// Deliberately wrong graph rewrites for checking that the differential tester
// catches a bug class (difftest_runner --inject-fault NAME). Never used by the
// product: they exist to measure the tester's power.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ember/Pass.h"

namespace difftest {

/// The fault names --inject-fault accepts.
std::vector<std::string> faultNames();
/// The pass that injects `name`, or null for an unknown name.
std::unique_ptr<ember::FunctionPass> createFaultPass(const std::string& name);

}  // namespace difftest
