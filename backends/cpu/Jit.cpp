// Emits the program as LLVM IR and compiles it with ORC LLJIT for the host CPU.
//
// The entry function `ember_main(regions, context)` is a straight-line list:
// - kernel steps become calls to the kernel trampoline with the step's
//   address (a compile-time descriptor: shapes, strides, offsets, packed
//   weights) baked in as a constant;
// - copies become llvm.memmove with constant addresses and sizes;
// - f32 elementwise ops become their own loop nest functions, specialised on
//   the constant dims, strides and offsets, vectorised by LLVM's O3 pipeline
//   for the host's vector ISA, and run through the parallel trampoline.
#include "Jit.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <cstdlib>
#include <mutex>

namespace ember::cpu {
namespace {

std::string llvmErrorText(llvm::Error error) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << error;
  return os.str();
}

void initializeLLVM() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

class LLJitCode final : public JitCode {
 public:
  LLJitCode(std::unique_ptr<llvm::orc::LLJIT> jit, Entry entry, std::string ir)
      : jit_(std::move(jit)), entry_(entry), ir_(std::move(ir)) {}
  Entry entry() const override { return entry_; }
  const std::string& irText() const override { return ir_; }

 private:
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  Entry entry_;
  std::string ir_;
};

class Emitter {
 public:
  Emitter(llvm::LLVMContext& ctx, llvm::Module& module, const JitRuntime& runtime)
      : ctx_(ctx), module_(module), runtime_(runtime), b_(ctx) {
    ptrTy_ = llvm::PointerType::getUnqual(ctx);
    i64Ty_ = llvm::Type::getInt64Ty(ctx);
    f32Ty_ = llvm::Type::getFloatTy(ctx);
  }

  void emit(const std::vector<JitOp>& ops) {
    auto* mainTy = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx_), {ptrTy_, ptrTy_}, false);
    llvm::Function* main =
        llvm::Function::Create(mainTy, llvm::Function::ExternalLinkage, "ember_main", module_);
    llvm::Value* regions = main->getArg(0);
    llvm::Value* context = main->getArg(1);
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", main));
    auto* stepTy = llvm::FunctionType::get(b_.getVoidTy(), {ptrTy_, ptrTy_, ptrTy_}, false);
    auto* parallelTy =
        llvm::FunctionType::get(b_.getVoidTy(), {ptrTy_, ptrTy_, i64Ty_, i64Ty_, ptrTy_}, false);
    int loops = 0;
    for (const JitOp& op : ops) {
      switch (op.kind) {
        case JitOp::Kind::Kernel:
          b_.CreateCall(stepTy, constPtr(runtime_.runStep), {constPtr(op.step), regions, context});
          break;
        case JitOp::Kind::Copy:
          b_.CreateMemMove(address(regions, op.dst), llvm::MaybeAlign(4), address(regions, op.src),
                           llvm::MaybeAlign(4), op.bytes);
          break;
        case JitOp::Kind::Elementwise: {
          llvm::Function* body = emitLoop(op.loop, "ew" + std::to_string(loops++));
          int64_t inner = 1;
          for (size_t d = 1; d < op.loop.dims.size(); ++d) inner *= op.loop.dims[d];
          b_.CreateCall(parallelTy, constPtr(runtime_.parallel),
                        {context, body, b_.getInt64(op.loop.dims[0]), b_.getInt64(inner), regions});
          break;
        }
      }
    }
    b_.CreateRetVoid();
  }

 private:
  llvm::Value* constPtr(const void* p) {
    return b_.CreateIntToPtr(b_.getInt64(uint64_t(uintptr_t(p))), ptrTy_);
  }

  llvm::Value* address(llvm::Value* regions, const Address& a) {
    llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(ptrTy_, regions, uint64_t(a.region));
    llvm::Value* base = b_.CreateAlignedLoad(ptrTy_, slot, llvm::Align(8));
    return b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), base, a.offset);
  }

  llvm::Value* callF(void* fn, std::initializer_list<llvm::Value*> args) {
    std::vector<llvm::Type*> params(args.size(), f32Ty_);
    auto* ty = llvm::FunctionType::get(f32Ty_, params, false);
    return b_.CreateCall(ty, constPtr(fn), args);
  }

  llvm::Value* unary(llvm::Intrinsic::ID id, llvm::Value* x) { return b_.CreateUnaryIntrinsic(id, x); }

  llvm::Value* compute(const ElementwiseLoop& loop, const std::vector<llvm::Value*>& x) {
    llvm::Value* zero = llvm::ConstantFP::get(f32Ty_, 0.0);
    llvm::Value* one = llvm::ConstantFP::get(f32Ty_, 1.0);
    switch (loop.kind) {
      case OpKind::Add:
        return b_.CreateFAdd(x[0], x[1]);
      case OpKind::Sub:
        return b_.CreateFSub(x[0], x[1]);
      case OpKind::Mul:
        return b_.CreateFMul(x[0], x[1]);
      case OpKind::Div:
        return b_.CreateFDiv(x[0], x[1]);
      case OpKind::Pow:
        return callF(runtime_.powF, {x[0], x[1]});
      case OpKind::Max:
      case OpKind::Min: {
        // NaN-propagating, like the reference: a < b ? b : a (max), b < a ? b : a (min).
        llvm::Value* less =
            loop.kind == OpKind::Max ? b_.CreateFCmpOLT(x[0], x[1]) : b_.CreateFCmpOLT(x[1], x[0]);
        llvm::Value* pick = b_.CreateSelect(less, x[1], x[0]);
        llvm::Value* nan = llvm::ConstantFP::getNaN(f32Ty_);
        return b_.CreateSelect(b_.CreateFCmpUNO(x[0], x[1]), nan, pick);
      }
      case OpKind::Neg:
        return b_.CreateFNeg(x[0]);
      case OpKind::Abs:
        return unary(llvm::Intrinsic::fabs, x[0]);
      case OpKind::Sqrt:
        return unary(llvm::Intrinsic::sqrt, x[0]);
      case OpKind::Floor:
        return unary(llvm::Intrinsic::floor, x[0]);
      case OpKind::Ceil:
        return unary(llvm::Intrinsic::ceil, x[0]);
      case OpKind::Reciprocal:
        return b_.CreateFDiv(one, x[0]);
      case OpKind::Exp:
        return callF(runtime_.expF, {x[0]});
      case OpKind::Log:
        return callF(runtime_.logF, {x[0]});
      case OpKind::Tanh:
        return callF(runtime_.tanhF, {x[0]});
      case OpKind::Erf:
        return callF(runtime_.erfF, {x[0]});
      case OpKind::Sin:
        return callF(runtime_.sinF, {x[0]});
      case OpKind::Cos:
        return callF(runtime_.cosF, {x[0]});
      case OpKind::Sigmoid: {
        llvm::Value* e = callF(runtime_.expF, {b_.CreateFNeg(x[0])});
        return b_.CreateFDiv(one, b_.CreateFAdd(one, e));
      }
      case OpKind::Sign: {
        llvm::Value* neg =
            b_.CreateSelect(b_.CreateFCmpOLT(x[0], zero), llvm::ConstantFP::get(f32Ty_, -1.0), x[0]);
        return b_.CreateSelect(b_.CreateFCmpOGT(x[0], zero), one, neg);
      }
      case OpKind::Relu:
        return b_.CreateSelect(b_.CreateFCmpOLT(x[0], zero), zero, x[0]);
      case OpKind::Clip: {
        llvm::Value* lo = llvm::ConstantFP::get(f32Ty_, loop.lo);
        llvm::Value* hi = llvm::ConstantFP::get(f32Ty_, loop.hi);
        llvm::Value* t = b_.CreateSelect(b_.CreateFCmpOLT(x[0], lo), lo, x[0]);
        return b_.CreateSelect(b_.CreateFCmpOGT(t, hi), hi, t);
      }
      default:
        assert(false && "not a JIT elementwise op");
        return x[0];
    }
  }

  /// void ewN(i64 begin, i64 end, ptr regions): the loop nest over
  /// [begin, end) x dims[1] x ... x dims[r-1].
  llvm::Function* emitLoop(const ElementwiseLoop& loop, const std::string& name) {
    auto* ty = llvm::FunctionType::get(b_.getVoidTy(), {i64Ty_, i64Ty_, ptrTy_}, false);
    llvm::Function* fn = llvm::Function::Create(ty, llvm::Function::InternalLinkage, name, module_);
    llvm::IRBuilderBase::InsertPointGuard guard(b_);
    llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx_, "entry", fn);
    b_.SetInsertPoint(entry);
    llvm::Value* regions = fn->getArg(2);
    llvm::Value* outBase = address(regions, loop.out);
    std::vector<llvm::Value*> inBase;
    for (const Address& a : loop.ins) inBase.push_back(address(regions, a));

    const size_t rank = loop.dims.size();
    std::vector<int64_t> outStrides(rank, 1);
    for (size_t d = rank; d-- > 1;) outStrides[d - 1] = outStrides[d] * loop.dims[d];

    // Nested counted loops; offsets are recomputed from the indices in the body.
    std::vector<llvm::PHINode*> index(rank);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "done", fn);
    llvm::BasicBlock* pre = entry;
    for (size_t d = 0; d < rank; ++d) {
      llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx_, "loop" + std::to_string(d), fn);
      if (d == 0)
        b_.CreateCondBr(b_.CreateICmpSLT(fn->getArg(0), fn->getArg(1)), header, done);
      else
        b_.CreateBr(header);
      b_.SetInsertPoint(header);
      index[d] = b_.CreatePHI(i64Ty_, 2, "i" + std::to_string(d));
      index[d]->addIncoming(d == 0 ? static_cast<llvm::Value*>(fn->getArg(0)) : b_.getInt64(0), pre);
      pre = header;
    }
    // Innermost body.
    auto offsetOf = [&](const std::vector<int64_t>& strides) {
      llvm::Value* off = b_.getInt64(0);
      for (size_t d = 0; d < rank; ++d)
        if (strides[d] != 0) off = b_.CreateAdd(off, b_.CreateMul(index[d], b_.getInt64(strides[d])));
      return off;
    };
    std::vector<llvm::Value*> xs;
    for (size_t k = 0; k < inBase.size(); ++k) {
      llvm::Value* p = b_.CreateInBoundsGEP(f32Ty_, inBase[k], offsetOf(loop.inStrides[k]));
      xs.push_back(b_.CreateAlignedLoad(f32Ty_, p, llvm::Align(4)));
    }
    llvm::Value* result = compute(loop, xs);
    b_.CreateAlignedStore(result, b_.CreateInBoundsGEP(f32Ty_, outBase, offsetOf(outStrides)),
                          llvm::Align(4));
    // Latches from the innermost outwards.
    for (size_t d = rank; d-- > 0;) {
      llvm::BasicBlock* current = b_.GetInsertBlock();
      llvm::Value* next = b_.CreateAdd(index[d], b_.getInt64(1), "", true, true);
      llvm::Value* bound = d == 0 ? static_cast<llvm::Value*>(fn->getArg(1)) : b_.getInt64(loop.dims[d]);
      llvm::BasicBlock* after =
          d == 0 ? done : llvm::BasicBlock::Create(ctx_, "latch" + std::to_string(d - 1), fn);
      b_.CreateCondBr(b_.CreateICmpSLT(next, bound), index[d]->getParent(), after);
      index[d]->addIncoming(next, current);
      b_.SetInsertPoint(after);
    }
    b_.CreateRetVoid();
    return fn;
  }

  llvm::LLVMContext& ctx_;
  llvm::Module& module_;
  const JitRuntime& runtime_;
  llvm::IRBuilder<> b_;
  llvm::PointerType* ptrTy_;
  llvm::Type* i64Ty_;
  llvm::Type* f32Ty_;
};

void optimize(llvm::Module& module, llvm::TargetMachine& tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(module, mam);
}

}  // namespace

bool jitSupportsElementwise(OpKind kind) {
  switch (kind) {
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Div:
    case OpKind::Pow:
    case OpKind::Max:
    case OpKind::Min:
    case OpKind::Neg:
    case OpKind::Abs:
    case OpKind::Sqrt:
    case OpKind::Floor:
    case OpKind::Ceil:
    case OpKind::Reciprocal:
    case OpKind::Exp:
    case OpKind::Log:
    case OpKind::Tanh:
    case OpKind::Erf:
    case OpKind::Sin:
    case OpKind::Cos:
    case OpKind::Sigmoid:
    case OpKind::Sign:
    case OpKind::Relu:
    case OpKind::Clip:
      return true;
    default:
      return false;
  }
}

Expected<std::unique_ptr<JitCode>> jitCompile(const std::string& name, const std::vector<JitOp>& ops,
                                              const JitRuntime& runtime) {
  initializeLLVM();
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb)
    return makeError("cpu backend: cannot detect the host for the JIT: ", llvmErrorText(jtmb.takeError()));
  jtmb->setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
  auto tm = jtmb->createTargetMachine();
  if (!tm) return makeError("cpu backend: no LLVM target machine: ", llvmErrorText(tm.takeError()));

  auto context = std::make_unique<llvm::LLVMContext>();
  auto module = std::make_unique<llvm::Module>(name, *context);
  module->setDataLayout((*tm)->createDataLayout());
  module->setTargetTriple((*tm)->getTargetTriple().str());
  Emitter(*context, *module, runtime).emit(ops);
  for (llvm::Function& f : *module) {
    if (f.isDeclaration()) continue;
    f.addFnAttr("target-cpu", (*tm)->getTargetCPU());
    f.addFnAttr("target-features", (*tm)->getTargetFeatureString());
    f.addFnAttr(llvm::Attribute::NoUnwind);
  }
  std::string verifyText;
  llvm::raw_string_ostream verifyOs(verifyText);
  if (llvm::verifyModule(*module, &verifyOs))
    return makeError("cpu backend: generated invalid LLVM IR for '", name, "': ", verifyOs.str());
  optimize(*module, **tm);
  std::string irText;
  if (std::getenv("EMBER_CPU_DUMP_IR")) {
    llvm::raw_string_ostream os(irText);
    module->print(os, nullptr);
  }

  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
  if (!jit) return makeError("cpu backend: cannot create the LLJIT: ", llvmErrorText(jit.takeError()));
  // LLVM may lower memmove/memset and libm intrinsics to calls into the C library.
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process)
    return makeError("cpu backend: cannot search the process: ", llvmErrorText(process.takeError()));
  (*jit)->getMainJITDylib().addGenerator(std::move(*process));
  if (auto e = (*jit)->addIRModule(llvm::orc::ThreadSafeModule(std::move(module), std::move(context))))
    return makeError("cpu backend: JIT rejected the module: ", llvmErrorText(std::move(e)));
  auto symbol = (*jit)->lookup("ember_main");
  if (!symbol) return makeError("cpu backend: JIT lookup failed: ", llvmErrorText(symbol.takeError()));
  auto entry = symbol->toPtr<JitCode::Entry>();
  return std::unique_ptr<JitCode>(new LLJitCode(std::move(*jit), entry, std::move(irText)));
}

}  // namespace ember::cpu
