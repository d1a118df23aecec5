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
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <cassert>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>

#include "JitDiskCache.h"

namespace ember::cpu {
namespace {

void optimize(llvm::Module& module, llvm::TargetMachine& tm);

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
  LLJitCode(std::unique_ptr<llvm::orc::LLJIT> jit, Entry entry, std::string ir, bool fromDiskCache)
      : jit_(std::move(jit)), entry_(entry), ir_(std::move(ir)), fromDiskCache_(fromDiskCache) {}
  Entry entry() const override { return entry_; }
  const std::string& irText() const override { return ir_; }
  bool fromDiskCache() const override { return fromDiskCache_; }

 private:
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  Entry entry_;
  std::string ir_;
  bool fromDiskCache_;
};

/// What an elementwise op's emitter builds one f32 element with.
struct ElementBuilder {
  llvm::IRBuilder<>& b;
  llvm::Module& module;
  llvm::Type* f32;
  const ElementwiseLoop& loop;  ///< the op's attributes (Clip's bounds)

  llvm::Constant* constant(double value) const { return llvm::ConstantFP::get(f32, value); }
  llvm::Value* intrinsic(llvm::Intrinsic::ID id, llvm::Value* x) const {
    return b.CreateUnaryIntrinsic(id, x);
  }
  /// A call of the float function the runtime provides as `name` (JitRuntime;
  /// jitCompile binds the name to the host's function, the AOT runtime
  /// library defines it).
  llvm::Value* call(const char* name, std::initializer_list<llvm::Value*> args) const {
    std::vector<llvm::Type*> params(args.size(), f32);
    auto* type = llvm::FunctionType::get(f32, params, false);
    return b.CreateCall(type, module.getOrInsertFunction(name, type).getCallee(), args);
  }
};

using Operands = const std::vector<llvm::Value*>&;
/// Builds one f32 element of an op from its loaded operands.
using ElementEmitter = llvm::Value* (*)(const ElementBuilder& e, Operands x);

/// NaN-propagating, like the reference: a < b ? b : a (max), b < a ? b : a (min).
llvm::Value* maxOrMin(const ElementBuilder& e, Operands x, bool max) {
  llvm::Value* less = max ? e.b.CreateFCmpOLT(x[0], x[1]) : e.b.CreateFCmpOLT(x[1], x[0]);
  llvm::Value* pick = e.b.CreateSelect(less, x[1], x[0]);
  llvm::Value* nan = llvm::ConstantFP::getNaN(e.f32);
  return e.b.CreateSelect(e.b.CreateFCmpUNO(x[0], x[1]), nan, pick);
}

struct ElementwiseEmitter {
  OpKind kind;
  ElementEmitter emit;
};

/// The elementwise ops the JIT emits as f32 loops, each with its emitter: an
/// op is JIT'd exactly when it has an entry here (jitSupportsElementwise).
const ElementwiseEmitter kElementwiseEmitters[] = {
    {OpKind::Add, [](const ElementBuilder& e, Operands x) { return e.b.CreateFAdd(x[0], x[1]); }},
    {OpKind::Sub, [](const ElementBuilder& e, Operands x) { return e.b.CreateFSub(x[0], x[1]); }},
    {OpKind::Mul, [](const ElementBuilder& e, Operands x) { return e.b.CreateFMul(x[0], x[1]); }},
    {OpKind::Div, [](const ElementBuilder& e, Operands x) { return e.b.CreateFDiv(x[0], x[1]); }},
    {OpKind::Pow,
     [](const ElementBuilder& e, Operands x) {
       return e.call("ember_aot_powf", {x[0], x[1]});
     }},
    {OpKind::Max, [](const ElementBuilder& e, Operands x) { return maxOrMin(e, x, /*max=*/true); }},
    {OpKind::Min, [](const ElementBuilder& e, Operands x) { return maxOrMin(e, x, /*max=*/false); }},
    {OpKind::Neg, [](const ElementBuilder& e, Operands x) { return e.b.CreateFNeg(x[0]); }},
    {OpKind::Abs,
     [](const ElementBuilder& e, Operands x) { return e.intrinsic(llvm::Intrinsic::fabs, x[0]); }},
    {OpKind::Sqrt,
     [](const ElementBuilder& e, Operands x) { return e.intrinsic(llvm::Intrinsic::sqrt, x[0]); }},
    {OpKind::Floor,
     [](const ElementBuilder& e, Operands x) { return e.intrinsic(llvm::Intrinsic::floor, x[0]); }},
    {OpKind::Ceil,
     [](const ElementBuilder& e, Operands x) { return e.intrinsic(llvm::Intrinsic::ceil, x[0]); }},
    {OpKind::Reciprocal,
     [](const ElementBuilder& e, Operands x) { return e.b.CreateFDiv(e.constant(1.0), x[0]); }},
    {OpKind::Exp, [](const ElementBuilder& e, Operands x) { return e.call("ember_aot_expf", {x[0]}); }},
    {OpKind::Log, [](const ElementBuilder& e, Operands x) { return e.call("ember_aot_logf", {x[0]}); }},
    {OpKind::Tanh, [](const ElementBuilder& e, Operands x) { return e.call("ember_aot_tanhf", {x[0]}); }},
    {OpKind::Erf, [](const ElementBuilder& e, Operands x) { return e.call("ember_aot_erff", {x[0]}); }},
    {OpKind::Sin, [](const ElementBuilder& e, Operands x) { return e.call("ember_aot_sinf", {x[0]}); }},
    {OpKind::Cos, [](const ElementBuilder& e, Operands x) { return e.call("ember_aot_cosf", {x[0]}); }},
    {OpKind::Sigmoid,
     [](const ElementBuilder& e, Operands x) {
       llvm::Value* one = e.constant(1.0);
       return e.b.CreateFDiv(one, e.b.CreateFAdd(one, e.call("ember_aot_expf", {e.b.CreateFNeg(x[0])})));
     }},
    {OpKind::Sign,
     [](const ElementBuilder& e, Operands x) {
       llvm::Value* zero = e.constant(0.0);
       llvm::Value* negative = e.b.CreateSelect(e.b.CreateFCmpOLT(x[0], zero), e.constant(-1.0), x[0]);
       return e.b.CreateSelect(e.b.CreateFCmpOGT(x[0], zero), e.constant(1.0), negative);
     }},
    {OpKind::Relu,
     [](const ElementBuilder& e, Operands x) {
       llvm::Value* zero = e.constant(0.0);
       return e.b.CreateSelect(e.b.CreateFCmpOLT(x[0], zero), zero, x[0]);
     }},
    {OpKind::Clip,
     [](const ElementBuilder& e, Operands x) {
       llvm::Value* lo = e.constant(e.loop.lo);
       llvm::Value* hi = e.constant(e.loop.hi);
       llvm::Value* raised = e.b.CreateSelect(e.b.CreateFCmpOLT(x[0], lo), lo, x[0]);
       return e.b.CreateSelect(e.b.CreateFCmpOGT(raised, hi), hi, raised);
     }},
};

/// The emitter of `kind`, or nullptr when the JIT does not emit it.
ElementEmitter elementEmitter(OpKind kind) {
  for (const ElementwiseEmitter& entry : kElementwiseEmitters)
    if (entry.kind == kind) return entry.emit;
  return nullptr;
}

class Emitter {
 public:
  /// `aot`: runtime functions are called by their C names in the AOT runtime
  /// library and steps are passed as encoded blobs, not host addresses.
  Emitter(llvm::LLVMContext& ctx, llvm::Module& module, const JitRuntime& runtime, bool aot = false)
      : ctx_(ctx), module_(module), runtime_(runtime), aot_(aot), b_(ctx) {
    ptrTy_ = llvm::PointerType::getUnqual(ctx);
    i64Ty_ = llvm::Type::getInt64Ty(ctx);
    f32Ty_ = llvm::Type::getFloatTy(ctx);
  }

  llvm::Function* emit(const std::vector<JitOp>& ops) {
    auto* mainTy = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx_), {ptrTy_, ptrTy_}, false);
    llvm::Function* main = llvm::Function::Create(
        mainTy, aot_ ? llvm::Function::InternalLinkage : llvm::Function::ExternalLinkage, "ember_main",
        module_);
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
          b_.CreateCall(stepTy, callee(runtime_.runStep, "ember_aot_run_step", stepTy),
                        {aot_ ? blob(op.blob) : stepSymbol(steps_++), regions, context});
          break;
        case JitOp::Kind::Copy:
          b_.CreateMemMove(address(regions, op.dst), llvm::MaybeAlign(4), address(regions, op.src),
                           llvm::MaybeAlign(4), op.bytes);
          break;
        case JitOp::Kind::Elementwise: {
          llvm::Function* body = emitLoop(op.loop, "ew" + std::to_string(loops++));
          int64_t inner = 1;
          for (size_t d = 1; d < op.loop.dims.size(); ++d) inner *= op.loop.dims[d];
          b_.CreateCall(parallelTy, callee(runtime_.parallel, "ember_aot_parallel", parallelTy),
                        {context, body, b_.getInt64(op.loop.dims[0]), b_.getInt64(inner), regions});
          break;
        }
      }
    }
    b_.CreateRetVoid();
    return main;
  }

  /// int <symbol>_run(inputs, outputs, scratch): regions from the weights'
  /// globals and the caller's scratch, inputs copied in, main run in a
  /// runtime context, outputs copied out; returns ember_aot_end's status.
  void emitAotEntry(const AotModule& m, llvm::Function* main) {
    auto* i32 = b_.getInt32Ty();
    auto* entryTy = llvm::FunctionType::get(i32, {ptrTy_, ptrTy_, ptrTy_}, false);
    llvm::Function* entry =
        llvm::Function::Create(entryTy, llvm::Function::ExternalLinkage, m.symbol + "_run", module_);
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", entry));
    auto* beginTy = llvm::FunctionType::get(ptrTy_, {i32, i32, i32, i32}, false);
    llvm::Value* context = b_.CreateCall(beginTy, callee(nullptr, "ember_aot_begin", beginTy),
                                         {b_.getInt32(uint32_t(m.format)), b_.getInt32(uint32_t(m.mr)),
                                          b_.getInt32(uint32_t(m.nr)), b_.getInt32(uint32_t(m.avx512))});
    llvm::BasicBlock* run = llvm::BasicBlock::Create(ctx_, "run", entry);
    llvm::BasicBlock* refused = llvm::BasicBlock::Create(ctx_, "refused", entry);
    b_.CreateCondBr(b_.CreateIsNull(context), refused, run);
    b_.SetInsertPoint(refused);
    b_.CreateRet(b_.getInt32(1));
    b_.SetInsertPoint(run);
    // scratch rounded up to 64 bytes: the I/O region, then the activations.
    llvm::Value* raw = b_.CreatePtrToInt(entry->getArg(2), i64Ty_);
    llvm::Value* aligned = b_.CreateAnd(b_.CreateAdd(raw, b_.getInt64(63)), b_.getInt64(~uint64_t(63)));
    llvm::Value* io = b_.CreateIntToPtr(aligned, ptrTy_);
    llvm::Value* activations = b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), io, (m.ioBytes + 63) / 64 * 64);
    llvm::Value* regions = b_.CreateAlloca(llvm::ArrayType::get(ptrTy_, kNumRegions));
    llvm::Value* regionValues[kNumRegions];
    regionValues[kConstants] = readOnly(m.constants, m.constantBytes, "ember_constants");
    regionValues[kIO] = io;
    regionValues[kActivations] = activations;
    regionValues[kPacked] = readOnly(m.packed, m.packedBytes, "ember_packed_weights");
    for (int r = 0; r < kNumRegions; ++r)
      b_.CreateAlignedStore(regionValues[r], b_.CreateConstInBoundsGEP1_64(ptrTy_, regions, uint64_t(r)),
                            llvm::Align(8));
    for (size_t i = 0; i < m.inputs.size(); ++i) {
      llvm::Value* src = b_.CreateAlignedLoad(
          ptrTy_, b_.CreateConstInBoundsGEP1_64(ptrTy_, entry->getArg(0), uint64_t(i)), llvm::Align(8));
      b_.CreateMemCpy(b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), io, m.inputs[i].offset),
                      llvm::MaybeAlign(1), src, llvm::MaybeAlign(1), m.inputs[i].type.sizeInBytes());
    }
    b_.CreateCall(main, {regions, context});
    for (size_t i = 0; i < m.outputs.size(); ++i) {
      llvm::Value* dst = b_.CreateAlignedLoad(
          ptrTy_, b_.CreateConstInBoundsGEP1_64(ptrTy_, entry->getArg(1), uint64_t(i)), llvm::Align(8));
      b_.CreateMemCpy(dst, llvm::MaybeAlign(1),
                      b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), io, m.outputs[i].offset),
                      llvm::MaybeAlign(1), m.outputs[i].type.sizeInBytes());
    }
    auto* endTy = llvm::FunctionType::get(i32, {ptrTy_}, false);
    b_.CreateRet(b_.CreateCall(endTy, callee(nullptr, "ember_aot_end", endTy), {context}));
  }

 private:
  /// JIT: kernel step i is the external symbol ember_step_<i>, bound to the
  /// step's host address when the object is loaded, so the object holds no
  /// host address and can be cached on disk.
  llvm::Value* stepSymbol(int index) {
    const std::string name = "ember_step_" + std::to_string(index);
    if (llvm::GlobalVariable* g = module_.getNamedGlobal(name)) return g;
    return new llvm::GlobalVariable(module_, b_.getInt8Ty(), true, llvm::GlobalValue::ExternalLinkage,
                                    nullptr, name);
  }

  /// A host function, by its C name: the AOT runtime library's, or (JIT) a
  /// symbol bound to the host address when the object is loaded.
  llvm::Value* callee(const void* /*address*/, const char* name, llvm::FunctionType* type) {
    return module_.getOrInsertFunction(name, type).getCallee();
  }

  /// A private read-only global of 64-byte alignment holding `bytes`.
  llvm::GlobalVariable* readOnly(const uint8_t* bytes, uint64_t size, const std::string& name) {
    llvm::Constant* init = llvm::ConstantDataArray::getRaw(
        llvm::StringRef(reinterpret_cast<const char*>(bytes), size), size, b_.getInt8Ty());
    auto* global = new llvm::GlobalVariable(module_, init->getType(), true, llvm::GlobalValue::PrivateLinkage,
                                            init, name);
    global->setAlignment(llvm::Align(64));
    return global;
  }

  /// An encoded step: its byte count (8 bytes, little-endian) then its bytes.
  llvm::Value* blob(const std::vector<uint8_t>& bytes) {
    std::vector<uint8_t> sized(8 + bytes.size());
    uint64_t n = bytes.size();
    std::memcpy(sized.data(), &n, 8);
    std::memcpy(sized.data() + 8, bytes.data(), bytes.size());
    llvm::GlobalVariable* global = readOnly(sized.data(), sized.size(), "ember_step");
    global->setAlignment(llvm::Align(8));
    return global;
  }

  llvm::Value* address(llvm::Value* regions, const Address& a) {
    llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(ptrTy_, regions, uint64_t(a.region));
    llvm::Value* base = b_.CreateAlignedLoad(ptrTy_, slot, llvm::Align(8));
    return b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), base, a.offset);
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
    inBase.reserve(loop.ins.size());
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
    xs.reserve(inBase.size());
    for (size_t k = 0; k < inBase.size(); ++k) {
      llvm::Value* p = b_.CreateInBoundsGEP(f32Ty_, inBase[k], offsetOf(loop.inStrides[k]));
      xs.push_back(b_.CreateAlignedLoad(f32Ty_, p, llvm::Align(4)));
    }
    const ElementEmitter emitElement = elementEmitter(loop.kind);
    assert(emitElement && "the compiler made a loop of an op the JIT does not emit");
    llvm::Value* result = emitElement(ElementBuilder{b_, module_, f32Ty_, loop}, xs);
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
  bool aot_;
  int steps_ = 0;
  llvm::IRBuilder<> b_;
  llvm::PointerType* ptrTy_;
  llvm::Type* i64Ty_;
  llvm::Type* f32Ty_;
};

/// Tags every function for the target's CPU, verifies and optimises (O3).
Error finishModule(llvm::Module& module, llvm::TargetMachine& tm, const std::string& name) {
  for (llvm::Function& f : module) {
    if (f.isDeclaration()) continue;
    f.addFnAttr("target-cpu", tm.getTargetCPU());
    f.addFnAttr("target-features", tm.getTargetFeatureString());
    f.addFnAttr(llvm::Attribute::NoUnwind);
  }
  std::string verifyText;
  llvm::raw_string_ostream verifyOs(verifyText);
  if (llvm::verifyModule(module, &verifyOs))
    return makeError("cpu backend: generated invalid LLVM IR for '", name, "': ", verifyOs.str());
  optimize(module, tm);
  return Error::success();
}

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

bool jitSupportsElementwise(OpKind kind) { return elementEmitter(kind) != nullptr; }

namespace {

/// What the object depends on besides the caller's key: every op as the
/// Emitter sees it (kernel steps only by position: their addresses are bound
/// at load time).
std::string opsKeyText(const std::vector<JitOp>& ops) {
  std::string text;
  auto num = [&](auto v) { text += std::to_string(v) + ' '; };
  auto address = [&](const Address& a) { num(a.region), num(a.offset); };
  for (const JitOp& op : ops) {
    num(int(op.kind));
    if (op.kind == JitOp::Kind::Copy) {
      address(op.dst), address(op.src), num(op.bytes);
    } else if (op.kind == JitOp::Kind::Elementwise) {
      const ElementwiseLoop& l = op.loop;
      uint32_t lo, hi;
      std::memcpy(&lo, &l.lo, 4);
      std::memcpy(&hi, &l.hi, 4);
      num(int(l.kind)), num(lo), num(hi), num(l.dims.size());
      for (int64_t d : l.dims) num(d);
      address(l.out);
      for (const Address& a : l.ins) address(a);
      for (const auto& strides : l.inStrides)
        for (int64_t st : strides) num(st);
    }
    text += '\n';
  }
  return text;
}

}  // namespace

namespace {

/// The on-disk cache's full key (JitDiskCache.h): the Ember build, the target
/// (triple, CPU, features), the caller's IR text and the ops.
std::string objectCacheKey(const llvm::orc::JITTargetMachineBuilder& jtmb, const std::string& cacheKey,
                           const std::vector<JitOp>& ops) {
  return jitCacheVersionLine() + "\ntarget " + jtmb.getTargetTriple().str() + " " + jtmb.getCPU() + " " +
         jtmb.getFeatures().getString() + "\n" + cacheKey + "\nops\n" + opsKeyText(ops);
}

/// Emits `ops` as LLVM IR, optimises it and compiles it to an object file;
/// `irText` receives the optimised IR when EMBER_CPU_DUMP_IR is set.
Expected<std::vector<char>> compileObject(const std::string& name, const std::vector<JitOp>& ops,
                                          const JitRuntime& runtime, llvm::TargetMachine& tm,
                                          std::string& irText) {
  auto context = std::make_unique<llvm::LLVMContext>();
  auto module = std::make_unique<llvm::Module>(name, *context);
  module->setDataLayout(tm.createDataLayout());
  module->setTargetTriple(tm.getTargetTriple().str());
  Emitter(*context, *module, runtime).emit(ops);
  EMBER_RETURN_IF_ERROR(finishModule(*module, tm, name));
  if (std::getenv("EMBER_CPU_DUMP_IR")) {
    llvm::raw_string_ostream os(irText);
    module->print(os, nullptr);
  }
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream out(buffer);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, out, nullptr, llvm::CGFT_ObjectFile))
    return makeError("cpu backend: the target cannot emit an object file");
  pm.run(*module);
  return std::vector<char>(buffer.begin(), buffer.end());
}

/// Binds the object's external names to this process's kernel steps (in
/// program order) and the runtime's functions.
Error bindHostSymbols(llvm::orc::LLJIT& jit, llvm::orc::JITDylib& dylib, const std::vector<JitOp>& ops,
                      const JitRuntime& runtime) {
  llvm::orc::SymbolMap symbols;
  auto bind = [&](const std::string& symbol, const void* address, llvm::JITSymbolFlags flags) {
    symbols[jit.mangleAndIntern(symbol)] =
        llvm::JITEvaluatedSymbol(llvm::pointerToJITTargetAddress(address), flags);
  };
  int stepIndex = 0;
  for (const JitOp& op : ops)
    if (op.kind == JitOp::Kind::Kernel) bind("ember_step_" + std::to_string(stepIndex++), op.step, {});
  const std::pair<const char*, void*> functions[] = {
      {"ember_aot_run_step", runtime.runStep}, {"ember_aot_parallel", runtime.parallel},
      {"ember_aot_tanhf", runtime.tanhF},      {"ember_aot_erff", runtime.erfF},
      {"ember_aot_sinf", runtime.sinF},        {"ember_aot_cosf", runtime.cosF},
      {"ember_aot_expf", runtime.expF},        {"ember_aot_logf", runtime.logF},
      {"ember_aot_powf", runtime.powF}};
  for (const auto& [symbol, address] : functions)
    if (address) bind(symbol, address, llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
  if (auto e = dylib.define(llvm::orc::absoluteSymbols(std::move(symbols))))
    return makeError("cpu backend: cannot bind the JIT's symbols: ", llvmErrorText(std::move(e)));
  return Error::success();
}

/// Loads `object` into a new LLJIT for the host, its external names bound
/// (bindHostSymbols), and returns the JIT and the address of ember_main.
Expected<std::pair<std::unique_ptr<llvm::orc::LLJIT>, JitCode::Entry>> loadObject(
    llvm::orc::JITTargetMachineBuilder jtmb, const std::vector<char>& object, const std::string& name,
    const std::vector<JitOp>& ops, const JitRuntime& runtime) {
  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(jtmb)).create();
  if (!jit) return makeError("cpu backend: cannot create the LLJIT: ", llvmErrorText(jit.takeError()));
  // LLVM may lower memmove/memset and libm intrinsics to calls into the C library.
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process)
    return makeError("cpu backend: cannot search the process: ", llvmErrorText(process.takeError()));
  llvm::orc::JITDylib& dylib = (*jit)->getMainJITDylib();
  dylib.addGenerator(std::move(*process));
  EMBER_RETURN_IF_ERROR(bindHostSymbols(**jit, dylib, ops, runtime));
  auto memory = llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(object.data(), object.size()), name);
  if (auto e = (*jit)->addObjectFile(std::move(memory)))
    return makeError("cpu backend: JIT rejected the object: ", llvmErrorText(std::move(e)));
  auto symbol = (*jit)->lookup("ember_main");
  if (!symbol) return makeError("cpu backend: JIT lookup failed: ", llvmErrorText(symbol.takeError()));
  const auto entry = symbol->toPtr<JitCode::Entry>();
  return std::make_pair(std::move(*jit), entry);
}

}  // namespace

Expected<std::unique_ptr<JitCode>> jitCompile(const std::string& name, const std::vector<JitOp>& ops,
                                              const JitRuntime& runtime, const std::string& cacheKey) {
  initializeLLVM();
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb)
    return makeError("cpu backend: cannot detect the host for the JIT: ", llvmErrorText(jtmb.takeError()));
  jtmb->setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
  // Position-independent: steps and runtime functions are external symbols
  // at arbitrary host addresses, reached through the GOT.
  jtmb->setRelocationModel(llvm::Reloc::PIC_);
  auto tm = jtmb->createTargetMachine();
  if (!tm) return makeError("cpu backend: no LLVM target machine: ", llvmErrorText(tm.takeError()));

  const std::string directory = cacheKey.empty() ? "" : jitCacheDirectory();
  std::string key, path;
  if (!directory.empty()) {
    key = objectCacheKey(*jtmb, cacheKey, ops);
    path = jitCachePath(directory, key);
  }
  std::optional<std::vector<char>> object;
  if (!path.empty()) object = readJitCacheEntry(path, key);
  std::string irText;
  const bool hit = object.has_value();
  if (!object) {
    EMBER_ASSIGN_OR_RETURN(object, compileObject(name, ops, runtime, **tm, irText));
    if (!path.empty()) writeJitCacheEntry(path, key, *object);
  }
  EMBER_ASSIGN_OR_RETURN(auto loaded, loadObject(std::move(*jtmb), *object, name, ops, runtime));
  return std::unique_ptr<JitCode>(
      new LLJitCode(std::move(loaded.first), loaded.second, std::move(irText), hit));
}

Error writeAotObject(const AotModule& m, const std::string& path) {
  initializeLLVM();
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) return makeError("cpu AOT: cannot detect the host: ", llvmErrorText(jtmb.takeError()));
  jtmb->setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
  jtmb->setRelocationModel(llvm::Reloc::PIC_);  // links into position-independent executables
  auto tm = jtmb->createTargetMachine();
  if (!tm) return makeError("cpu AOT: no LLVM target machine: ", llvmErrorText(tm.takeError()));

  llvm::LLVMContext context;
  llvm::Module module(m.symbol, context);
  module.setDataLayout((*tm)->createDataLayout());
  module.setTargetTriple((*tm)->getTargetTriple().str());
  JitRuntime names;  // AOT: every runtime function is called by name
  Emitter emitter(context, module, names, true);
  llvm::Function* main = emitter.emit(m.ops);
  emitter.emitAotEntry(m, main);
  EMBER_RETURN_IF_ERROR(finishModule(module, **tm, m.symbol));

  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec) return makeError(path, ": cannot write: ", ec.message());
  llvm::legacy::PassManager pm;
  if ((*tm)->addPassesToEmitFile(pm, out, nullptr, llvm::CGFT_ObjectFile))
    return makeError("cpu AOT: the target cannot emit an object file");
  pm.run(module);
  out.flush();
  if (out.has_error()) return makeError(path, ": write failed");
  return Error::success();
}

}  // namespace ember::cpu
