// What the LLVM C API lacks for csi-cc: splitting a critical CFG edge (with PHI
// updates), giving landing pads one predecessor each, the first insertion point of a block, and
// registering a new global variable's debug info with its compile unit, a function's COMDAT.
#include <llvm-c/Core.h>
#include <set>
#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/DebugInfoMetadata.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>
#include <llvm/ADT/SetVector.h>
#include <llvm/IR/CFG.h>
#include <llvm/Transforms/Utils/BasicBlockUtils.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/MDBuilder.h>

using namespace llvm;

extern "C" LLVMBasicBlockRef csi_split_critical_edge(LLVMValueRef term, unsigned succ) {
  auto *ti = unwrap<Instruction>(term);
  CriticalEdgeSplittingOptions opts;
  opts.setMergeIdenticalEdges();
  BasicBlock *bb = SplitCriticalEdge(ti, succ, opts);
  return wrap(bb);
}

// Appends `gve` (a DIGlobalVariableExpression) to the globals of the module's first compile unit.
extern "C" int csi_add_global_to_cu(LLVMModuleRef m, LLVMMetadataRef gve) {
  Module *mod = unwrap(m);
  auto cus = mod->debug_compile_units();
  if (cus.begin() == cus.end()) return 0;
  DICompileUnit *cu = *cus.begin();
  SmallVector<Metadata *, 16> all;
  for (auto *g : cu->getGlobalVariables()) all.push_back(g);
  all.push_back(unwrap<DIGlobalVariableExpression>(gve));
  cu->replaceGlobalVariables(MDTuple::get(mod->getContext(), all));
  return 1;
}

// Gives every predecessor of a landing pad a landing pad block of its own (LLVM's
// SplitLandingPadPredecessors: the landingpad is cloned into one new block per predecessor,
// the clones merged by a PHI in the old block), so that every unwind edge can carry its own
// instrumentation after its pad's landingpad. Returns 0 when the function uses funclet-based
// EH (catchswitch / cleanuppad), whose pads cannot be split this way.
extern "C" int csi_dedicate_landing_pads(LLVMValueRef fn) {
  Function *f = unwrap<Function>(fn);
  SmallVector<BasicBlock *, 8> pads;
  for (BasicBlock &bb : *f) {
    Instruction *first = bb.getFirstNonPHI();
    if (!first) return 0;
    if (isa<CatchSwitchInst>(first) || isa<CatchPadInst>(first) || isa<CleanupPadInst>(first))
      return 0;
    if (bb.isLandingPad()) pads.push_back(&bb);
  }
  for (BasicBlock *pad : pads) {
    SmallSetVector<BasicBlock *, 8> preds(pred_begin(pad), pred_end(pad));
    BasicBlock *rest = pad;
    for (size_t k = 0; k + 1 < preds.size(); ++k) {
      SmallVector<BasicBlock *, 2> made;
      BasicBlock *one[] = {preds[k]};
      SplitLandingPadPredecessors(rest, one, ".csi", ".csi.rest", made);
      if (made.size() != 2) return 0;
      rest = made[1];
    }
  }
  return 1;
}

// The first place an instruction may be inserted in `bb` (after PHIs and a landingpad), or
// null when there is none (a catchswitch block).
extern "C" LLVMValueRef csi_first_insertion_pt(LLVMBasicBlockRef b) {
  BasicBlock *bb = unwrap(b);
  auto it = bb->getFirstInsertionPt();
  if (it == bb->end()) return nullptr;
  return wrap(&*it);
}

// The name of `f`'s COMDAT group (not NUL-terminated), or null when it has none.
extern "C" const char *csi_comdat_name(LLVMValueRef f, size_t *len) {
  auto *go = dyn_cast<GlobalObject>(unwrap<Value>(f));
  const Comdat *c = go ? go->getComdat() : nullptr;
  if (!c) return nullptr;
  *len = c->getName().size();
  return c->getName().data();
}

// The name of the subprogram an instruction's debug location belongs to (the innermost
// scope's subprogram: an inlined function's, not the caller's), its linkage name when it has
// one; null without a location. Lets csi-cc say which lines of a function are inlined code.
extern "C" const char *csi_loc_subprogram(LLVMValueRef inst, size_t *len) {
  auto *i = dyn_cast<Instruction>(unwrap<Value>(inst));
  if (!i) return nullptr;
  const DILocation *loc = i->getDebugLoc().get();
  if (!loc) return nullptr;
  DISubprogram *sp = loc->getScope() ? loc->getScope()->getSubprogram() : nullptr;
  if (!sp) return nullptr;
  StringRef name = sp->getLinkageName();
  if (name.empty()) name = sp->getName();
  *len = name.size();
  return name.data();
}

// A call the optimizer cannot have moved out of its source-level control context: it may
// write memory, throw or not return (LLVM's `mayHaveSideEffects`), so it is never speculated,
// hoisted past a condition or sunk into one, and calls merged from different lines get a
// merged (line 0) location. Intrinsics and inline assembly do not count.
extern "C" int csi_anchoring_call(LLVMValueRef i) {
  auto *cb = dyn_cast<CallBase>(unwrap<Instruction>(i));
  if (!cb || cb->isInlineAsm()) return 0;
  Function *f = cb->getCalledFunction();
  if (f && f->isIntrinsic()) return 0;
  return cb->mayHaveSideEffects() ? 1 : 0;
}

// Links csi-cc's runtime (`src`, consumed) into the unit `dest`: every named definition of the
// runtime becomes linkonce_odr, hidden and its own COMDAT (one copy per linked module), the
// runtime's module flags are dropped (the unit's own decide code generation), and `init` /
// `fini` become a constructor / destructor whose entries live in their function's COMDAT (one
// each per linked module). Returns 0 on success, 1 when the targets differ (nothing linked),
// 2 when linking failed.
#include <llvm/Linker/Linker.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>
extern "C" int csi_link_runtime(LLVMModuleRef dest, LLVMModuleRef src, const char *init,
                                const char *fini) {
  Module *d = unwrap(dest);
  std::unique_ptr<Module> s(unwrap(src));
  if (s->getTargetTriple() != d->getTargetTriple()) return 1;
  if (NamedMDNode *flags = s->getModuleFlagsMetadata()) s->eraseNamedMetadata(flags);
  if (NamedMDNode *ident = s->getNamedMetadata("llvm.ident")) s->eraseNamedMetadata(ident);
  s->setDataLayout(d->getDataLayout());
  // Linked as plain definitions (the linker would drop linkonce ones nothing references
  // yet), made linkonce_odr in their own COMDAT after.
  std::vector<std::string> names;
  for (GlobalObject &g : s->global_objects())
    if (!g.isDeclaration() && !g.hasLocalLinkage()) names.push_back(g.getName().str());
  if (Linker::linkModules(*d, std::move(s))) return 2;
  for (const std::string &n : names) {
    GlobalValue *g = d->getNamedValue(n);
    auto *go = dyn_cast_or_null<GlobalObject>(g);
    if (!go) continue;
    go->setLinkage(GlobalValue::LinkOnceODRLinkage);
    go->setVisibility(GlobalValue::HiddenVisibility);
    go->setComdat(d->getOrInsertComdat(n));
  }
  Function *i = d->getFunction(init), *f = d->getFunction(fini);
  if (!i || !f) return 3;
  appendToGlobalCtors(*d, i, 65535, i);
  appendToGlobalDtors(*d, f, 65535, f);
  return 0;
}

// Customizable tracing (dissertation ch. 3): an uninstrumented replica of `fn`, named `name`,
// internal, with a subprogram of its own (CloneFunction). Made before `fn` is
// instrumented. Null when `fn` is variadic (a springboard cannot forward its arguments) or
// takes a block's address.
extern "C" LLVMValueRef csi_clone_function(LLVMValueRef fn, const char *name) {
  Function *f = unwrap<Function>(fn);
  if (f->isVarArg()) return nullptr;
  // A block whose address is taken (computed goto: `static void *tab[] = {&&L1, ...}` in Lua's
  // VM) is reached through constants that name the original's blocks. CloneFunction remaps
  // the ones in the body; a table in a global's initializer gets a copy for the replica (below)
  // when only `fn` uses it; otherwise no replica.
  SmallVector<GlobalVariable *, 2> tables;
  for (BasicBlock &bb : *f) {
    if (!bb.hasAddressTaken()) continue;
    BlockAddress *ba = BlockAddress::lookup(&bb);
    if (!ba) continue;
    SmallVector<User *, 8> work(ba->users().begin(), ba->users().end());
    while (!work.empty()) {
      User *u = work.pop_back_val();
      if (auto *i = dyn_cast<Instruction>(u)) {
        if (i->getFunction() != f) return nullptr;
      } else if (auto *g = dyn_cast<GlobalVariable>(u)) {
        for (User *gu : g->users()) {
          auto *gi = dyn_cast<Instruction>(gu);
          if (!gi || gi->getFunction() != f || !g->isConstant()) return nullptr;
        }
        if (!is_contained(tables, g)) tables.push_back(g);
      } else if (isa<Constant>(u)) {
        work.append(u->user_begin(), u->user_end());
      } else {
        return nullptr;
      }
    }
  }
  ValueToValueMapTy vmap;
  Function *c = CloneFunction(f, vmap);
  for (GlobalVariable *g : tables) {
    Constant *init = MapValue(g->getInitializer(), vmap);
    auto *copy = new GlobalVariable(*f->getParent(), g->getValueType(), true,
                                    GlobalValue::InternalLinkage, init, g->getName() + ".__csi_off");
    copy->setAlignment(g->getAlign());
    copy->setUnnamedAddr(g->getUnnamedAddr());
    for (BasicBlock &bb : *c)
      for (Instruction &i : bb) i.replaceUsesOfWith(g, copy);
  }
  c->setName(name);
  // The replica's own subprogram (CloneFunction made a distinct copy) is told from the
  // original's by its linkage name, `<linkage or name>.__csi_off` (GCC's clone suffix form,
  // which debuggers demangle as "[clone .__csi_off]"): a reader must know that a frame — or a
  // copy inlined into a caller — runs uninstrumented code.
  if (DISubprogram *sp = c->getSubprogram()) {
    StringRef base = sp->getLinkageName().empty() ? sp->getName() : sp->getLinkageName();
    sp->replaceLinkageName(MDString::get(f->getContext(), (base + ".__csi_off").str()));
  }
  c->setLinkage(GlobalValue::InternalLinkage);
  c->setVisibility(GlobalValue::DefaultVisibility);
  c->setDLLStorageClass(GlobalValue::DefaultStorageClass);
  // In no COMDAT: copies of `fn` inlined elsewhere in the unit reference it, and an internal
  // symbol in a group the linker discards (another unit's copy of a template kept) would
  // leave those references dangling.
  c->setComdat(nullptr);
  // Inlined as the original would be (zstd's always_inline helpers: a replica called out of
  // line cost ×1.5 instructions): the reader drops the springboard scope around an inlined
  // replica (`Extract::without_springboards`).
  return wrap(c);
}

// The springboard of a switchable function `fn` with switch `sw` and replica `off`. Where it
// can, `fn` becomes a dispatcher of no frame and no debug information — load the switch,
// musttail-call `<fn>.__csi_on` (the instrumented body, moved there with `fn`'s subprogram) or
// `off` — three instructions, and inlined into callers like any small function: a test inside
// the body would sit after the prologue (the register allocator keeps the arguments in
// callee-saved registers from the entry on, which defeats shrink-wrapping) and cost a frame
// set-up per call of a switched-off function. A function whose blocks' addresses are taken
// (computed goto: the constants name `fn`'s blocks) or that forwards arguments on the stack
// (`byval`: x86-64's lowering of such a musttail call overwrites the return address, LLVM 19)
// keeps the test in its own body, right after the entry's allocas (so does one the caller
// says must keep its body: `may_move_body` 0), and the latter calls its
// replica plainly (the reader drops that frame: the same function, at a line-0 call, around
// its replica's). Returns the function that holds the instrumented body.
extern "C" LLVMValueRef csi_add_springboard(LLVMValueRef fn, LLVMValueRef off, LLVMValueRef sw,
                                            int may_move_body) {
  Function *f = unwrap<Function>(fn);
  Function *o = unwrap<Function>(off);
  GlobalVariable *g = unwrap<GlobalVariable>(sw);
  LLVMContext &ctx = f->getContext();
  AttributeList al = f->getAttributes();
  bool byStack = al.hasAttrSomewhere(Attribute::ByVal) || al.hasAttrSomewhere(Attribute::InAlloca) ||
                 al.hasAttrSomewhere(Attribute::Preallocated);
  bool blockAddresses = false;
  for (BasicBlock &bb : *f) blockAddresses |= bb.hasAddressTaken();
  MDBuilder md(ctx);
  auto tailCall = [&](IRBuilder<> &b, Function *from, Function *to, bool must, bool noinline) {
    SmallVector<Value *, 8> args;
    for (Argument &a : from->args()) args.push_back(&a);
    CallInst *call = b.CreateCall(to->getFunctionType(), to, args);
    call->setCallingConv(f->getCallingConv());
    call->setAttributes(to->getAttributes());
    call->setTailCallKind(must ? CallInst::TCK_MustTail : CallInst::TCK_None);
    if (noinline) {
      // (The callee's own attributes came along: an always_inline function's would clash.)
      call->removeFnAttr(Attribute::AlwaysInline);
      call->addFnAttr(Attribute::NoInline);
    }
    if (f->getReturnType()->isVoidTy())
      b.CreateRetVoid();
    else
      b.CreateRet(call);
  };
  if (may_move_body && !byStack && !blockAddresses) {
    Function *on = Function::Create(f->getFunctionType(), GlobalValue::InternalLinkage,
                                    f->getAddressSpace(), f->getName() + ".__csi_on", f->getParent());
    on->copyAttributesFrom(f);
    on->setLinkage(GlobalValue::InternalLinkage);
    on->setVisibility(GlobalValue::DefaultVisibility);
    on->setDLLStorageClass(GlobalValue::DefaultStorageClass);
    on->setComdat(nullptr);  // as the replica's (see csi_clone_function)
    // The instrumented bodies lie together, apart from the code a switched-off build runs,
    // in a section of their own after `.text` (`.csi.text`, which no linker script names: GNU
    // ld and lld place it after the code sections; an explicit section stays): the kernel
    // maps a file's text 64 KiB around each page fault, so bodies spread among the running
    // ones were resident although never run (Lua, every switch off: 572 KiB of text resident
    // against plain's 188, 332 KiB once they lay together in `.text.unlikely.*`). At the
    // start of `.text` (where GNU ld puts `.text.unlikely.*`) the first of them shared the
    // windows of `.init` and `.plt`, which every run maps: max RSS with every switch off,
    // gzip ×1.079 there, ×1.016 after `.text`; Lua ×1.018 → ×1.014, zstd ×1.006 → ×1.004.
    if (!f->hasSection())
      on->setSection(".csi.text");
    on->splice(on->end(), f);
    for (auto [from, to] : zip(f->args(), on->args())) {
      to.takeName(&from);
      from.replaceAllUsesWith(&to);
    }
    on->setSubprogram(f->getSubprogram());
    f->setSubprogram(nullptr);
    // `fn`'s own dispatch, for calls from other units and through pointers, must stay three
    // instructions: its calls are never inlined (the optimizer would inline a body called
    // once into it, and the test would sit after that body's prologue again). The unit's
    // own calls test the switch where they are (`csi_dispatch_call`).
    BasicBlock *entry = BasicBlock::Create(ctx, "csi.switch", f);
    BasicBlock *onb = BasicBlock::Create(ctx, "csi.on", f);
    BasicBlock *offb = BasicBlock::Create(ctx, "csi.off", f);
    IRBuilder<> b(entry);
    Value *v = b.CreateLoad(Type::getInt8Ty(ctx), g, "csi.switch");
    Value *isOn = b.CreateICmpNE(v, ConstantInt::get(Type::getInt8Ty(ctx), 0));
    b.CreateCondBr(isOn, onb, offb, md.createLikelyBranchWeights());
    IRBuilder<> nb(onb);
    tailCall(nb, f, on, true, true);
    IRBuilder<> ob(offb);
    tailCall(ob, f, o, true, true);
    return wrap(on);
  }
  BasicBlock &entry = f->getEntryBlock();
  BasicBlock::iterator at = entry.getFirstInsertionPt();
  while (at != entry.end() && isa<AllocaInst>(&*at)) ++at;
  BasicBlock *on = entry.splitBasicBlock(at, "csi.on");
  entry.getTerminator()->eraseFromParent();
  DILocation *loc = nullptr;
  if (DISubprogram *sp = f->getSubprogram()) loc = DILocation::get(ctx, 0, 0, sp);
  BasicBlock *offb = BasicBlock::Create(ctx, "csi.off", f, on);
  IRBuilder<> b(&entry);
  if (loc) b.SetCurrentDebugLocation(loc);
  Value *v = b.CreateLoad(Type::getInt8Ty(ctx), g, "csi.switch");
  Value *isOn = b.CreateICmpNE(v, ConstantInt::get(Type::getInt8Ty(ctx), 0));
  b.CreateCondBr(isOn, on, offb, md.createLikelyBranchWeights());
  IRBuilder<> ob(offb);
  if (loc) ob.SetCurrentDebugLocation(loc);
  tailCall(ob, f, o, !byStack, false);
  return fn;
}

// The last step for a switchable function whose body moved out (`csi_add_springboard`) and
// that is in no COMDAT: its dispatcher `fn` goes, and `fn`'s symbol becomes an alias of the
// replica `off`, whose entry gets a 5-byte NOP (below). The link step and `csi tracing`
// switch the function on by writing a `jmp` to `on` over that NOP (and back): calls from
// other units and through pointers then run the replica with no test and no jump at all —
// a switched-off function costs them what the plain build's does, where the dispatcher's
// load, compare and taken branch cost Lua's C API ×1.04 instructions and ×1.06 CPU time with
// every switch off. The unit's own calls keep their switch tests and call `on` or `off`
// directly (`csi_dispatch_call`), so the switch byte stays what the reader goes by; `on`,
// which nothing may call any more once they are inlined, is kept for the jump, as are the
// replica and the switch `sw`: in `llvm.used`, which on ELF also marks their sections
// SHF_GNU_RETAIN, so that a link with `--gc-sections` keeps them too (nothing refers to
// `on` but the jump the link step writes; with `llvm.compiler.used` such a link dropped the
// replicas and bodies the unit's own code did not call, and the link step found no entry
// to patch). Returns the alias, which now stands for `fn`.
extern "C" LLVMValueRef csi_entry_alias(LLVMValueRef fn, LLVMValueRef onv, LLVMValueRef offv,
                                        LLVMValueRef sw) {
  Function *f = unwrap<Function>(fn);
  Function *on = unwrap<Function>(onv);
  Function *off = unwrap<Function>(offv);
  Module &m = *f->getParent();
  // The NOP as prologue data (bytes LLVM emits at the entry, before any instruction of the
  // function): no `__patchable_function_entries` record, whose address each PIE relocates at
  // load (Lua: 1,070 entries, 25 KB of relocations, RSS +2 %). With branch protection the
  // entry must stay an `endbr64`, which prologue data would precede: there LLVM places the NOP
  // after it (`patchable-function-entry`).
  auto *ibt = mdconst::extract_or_null<ConstantInt>(m.getModuleFlag("cf-protection-branch"));
  if (ibt && !ibt->isZero()) {
    off->addFnAttr("patchable-function-entry", "5");
  } else {
    static const uint8_t nop[5] = {0x0F, 0x1F, 0x44, 0x00, 0x08};
    off->setPrologueData(ConstantDataArray::get(m.getContext(), ArrayRef<uint8_t>(nop)));
  }
  // A call left calling `fn` (a musttail call, one through a mismatched prototype, a COMDAT
  // replica's: see `call_past_dispatchers`) must reach the entry the switch patches, not an
  // inlined copy of the replica: GlobalOpt turns calls of the alias into calls of `off`.
  for (User *u : f->users())
    if (auto *cb = dyn_cast<CallBase>(u))
      if (cb->getCalledOperand() == f) {
        cb->removeFnAttr(Attribute::AlwaysInline);
        cb->addFnAttr(Attribute::NoInline);
      }
  GlobalAlias *a = GlobalAlias::create(f->getValueType(), f->getAddressSpace(), f->getLinkage(),
                                       "", off, &m);
  a->setVisibility(f->getVisibility());
  a->setDLLStorageClass(f->getDLLStorageClass());
  a->setUnnamedAddr(f->getUnnamedAddr());
  f->replaceAllUsesWith(a);
  a->takeName(f);
  f->eraseFromParent();
  // `off` too: GlobalOpt would otherwise give an internal aliasee the alias's name, and
  // the reader tells the replica by its symbol's suffix. And the switch, which the unit's
  // code may no longer read at all: `csi tracing` and the reader find it by its symbol.
  appendToUsed(m, {on, off, unwrap<GlobalVariable>(sw)});
  return wrap(a);
}

// A direct call of a switchable function `fn`, made from instrumented code of its unit, tests
// `fn`'s switch where it is and calls the instrumented body `on` or the replica `off`: either
// may then be inlined on its merits, with the call's own debug location (a dispatch function
// of no debug information in between would drop the inlined code's scopes). Returns 0 when
// the call stays as it is (musttail: nothing may come between it and the return).
//
// The test and both calls sit in a scope of their own, inlined at the call: the subprogram
// `scope` (`csi_dispatch_scope`). Without it, code the optimizer merges from the two inlined
// bodies (the same statements, sunk into the join) would get the call's own location — a
// crash there would show the caller at the call, with no frame of the callee at all; with it,
// such code shows the callee at line 0 (the reader: the callee, position unknown).
extern "C" int csi_dispatch_call(LLVMValueRef callv, LLVMValueRef sw, LLVMValueRef onv,
                                 LLVMValueRef offv, LLVMMetadataRef scope) {
  auto *cb = unwrap<CallBase>(callv);
  auto *g = unwrap<GlobalVariable>(sw);
  auto *on = unwrap<Function>(onv);
  auto *off = unwrap<Function>(offv);
  LLVMContext &ctx = cb->getContext();
  MDBuilder md(ctx);
  // The test and the branches keep the call's own location (a stop there is the caller's, at
  // the call); the two calls get the dispatch scope, and what inlines at them nests in it.
  DebugLoc own = cb->getDebugLoc();
  DebugLoc at = own;
  if (own && scope)
    at = DILocation::get(ctx, 0, 0, unwrap<DISubprogram>(scope), own.get());
  if (auto *ci = dyn_cast<CallInst>(cb)) {
    if (ci->isMustTailCall()) return 0;
    IRBuilder<> b(ci);
    b.SetCurrentDebugLocation(own);
    Value *v = b.CreateLoad(Type::getInt8Ty(ctx), g, "csi.switch");
    Value *isOn = b.CreateICmpNE(v, ConstantInt::get(Type::getInt8Ty(ctx), 0));
    Instruction *thenT = nullptr, *elseT = nullptr;
    SplitBlockAndInsertIfThenElse(isOn, ci->getIterator(), &thenT, &elseT,
                                  md.createLikelyBranchWeights());
    thenT->setDebugLoc(own);
    elseT->setDebugLoc(own);
    auto *c1 = cast<CallInst>(ci->clone());
    c1->insertBefore(thenT);
    c1->setCalledFunction(on);
    c1->setDebugLoc(at);
    auto *c2 = cast<CallInst>(ci->clone());
    c2->insertBefore(elseT);
    c2->setCalledFunction(off);
    c2->setDebugLoc(at);
    if (!ci->getType()->isVoidTy()) {
      PHINode *phi = PHINode::Create(ci->getType(), 2, ci->getName(), ci->getIterator());
      phi->addIncoming(c1, c1->getParent());
      phi->addIncoming(c2, c2->getParent());
      phi->setDebugLoc(own);
      ci->replaceAllUsesWith(phi);
    }
    ci->eraseFromParent();
    return 1;
  }
  auto *ii = dyn_cast<InvokeInst>(cb);
  if (!ii) return 0;
  BasicBlock *bb = ii->getParent();
  BasicBlock *normal = ii->getNormalDest();
  BasicBlock *unwind = ii->getUnwindDest();
  Function *f = bb->getParent();
  BasicBlock *onb = BasicBlock::Create(ctx, "csi.on", f, normal);
  BasicBlock *offb = BasicBlock::Create(ctx, "csi.off", f, normal);
  BasicBlock *join = BasicBlock::Create(ctx, "csi.join", f, normal);
  auto *i1 = cast<InvokeInst>(ii->clone());
  i1->insertInto(onb, onb->end());
  i1->setCalledFunction(on);
  i1->setNormalDest(join);
  i1->setDebugLoc(at);
  auto *i2 = cast<InvokeInst>(ii->clone());
  i2->insertInto(offb, offb->end());
  i2->setCalledFunction(off);
  i2->setNormalDest(join);
  i2->setDebugLoc(at);
  IRBuilder<> jb(join);
  jb.SetCurrentDebugLocation(own);
  if (!ii->getType()->isVoidTy()) {
    PHINode *phi = jb.CreatePHI(ii->getType(), 2, ii->getName());
    phi->addIncoming(i1, onb);
    phi->addIncoming(i2, offb);
    ii->replaceAllUsesWith(phi);
  }
  jb.CreateBr(normal);
  for (PHINode &phi : normal->phis()) phi.replaceIncomingBlockWith(bb, join);
  for (PHINode &phi : unwind->phis()) {
    Value *v = phi.getIncomingValueForBlock(bb);
    phi.removeIncomingValue(bb, false);
    phi.addIncoming(v, onb);
    phi.addIncoming(v, offb);
  }
  IRBuilder<> b(ii);
  b.SetCurrentDebugLocation(own);
  Value *v = b.CreateLoad(Type::getInt8Ty(ctx), g, "csi.switch");
  Value *isOn = b.CreateICmpNE(v, ConstantInt::get(Type::getInt8Ty(ctx), 0));
  b.CreateCondBr(isOn, onb, offb, md.createLikelyBranchWeights());
  ii->eraseFromParent();
  return 1;
}

// The subprogram of the scope around a dispatch at a call of `on`'s function (see
// `csi_dispatch_call`): the function's name, linkage name `<linkage or name>.__csi_dispatch`,
// artificial; no code of its own. Null when `on` has no debug information.
extern "C" LLVMMetadataRef csi_dispatch_scope(LLVMValueRef onv) {
  auto *on = unwrap<Function>(onv);
  DISubprogram *sp = on->getSubprogram();
  if (!sp) return nullptr;
  StringRef base = sp->getLinkageName().empty() ? sp->getName() : sp->getLinkageName();
  LLVMContext &ctx = on->getContext();
  std::string linkage = (base + ".__csi_dispatch").str();
  auto *d = DISubprogram::getDistinct(
      ctx, sp->getScope(), sp->getName(), linkage,
      sp->getFile(), sp->getLine(), sp->getType(), sp->getScopeLine(), nullptr, 0, 0,
      sp->getFlags() | DINode::FlagArtificial, DISubprogram::SPFlagDefinition, sp->getUnit());
  return wrap(d);
}

// Splits the block of `before` there: the head ends in `if (cond)` into a new block (returned:
// its terminator, a branch to the tail, which starts with `before`). Successors' PHIs follow.
// `unlikely`: the branch says the new block seldom runs (laid out of the hot path).
extern "C" LLVMValueRef csi_split_if_then(LLVMValueRef cond, LLVMValueRef before, int unlikely) {
  Instruction *c = unwrap<Instruction>(cond);
  MDNode *weights = unlikely ? MDBuilder(c->getContext()).createUnlikelyBranchWeights() : nullptr;
  Instruction *t = SplitBlockAndInsertIfThen(c, unwrap<Instruction>(before)->getIterator(),
                                             /*Unreachable=*/false, weights);
  // Both new branches are the probe's, not the source line's (they took the back edge's).
  c->getParent()->getTerminator()->setDebugLoc(DebugLoc());
  t->setDebugLoc(DebugLoc());
  return wrap(t);
}

// `--csi-probe-hoisting=peel` (see instrument/hoist.rs): peels the first iteration off each
// loop of `fn`, inner loops first, of at most `max_size` instructions where one of the
// coverage probe stores `probes` stores its byte (`keys[k]`: the same for stores into the same
// byte) on every way from the loop's head to each latch — in a block that dominates every
// latch, or in each of the paths the optimizer duplicated a block into (zstd's candidate loop
// stores its join block's byte on both sides of a test). LLVM's own peeling
// (the loop unroller's) keeps the dominator tree and loop info current as it goes; each loop
// is put in simplified and LCSSA form first, as the unroller does. A function with computed
// gotos is left alone: it is an interpreter's dispatch, whose small loops run a few times
// per entry, and whose speed follows its layout — Lua's `bb` ran ×1.255 plain's CPU time
// with its `luaV_execute` peeled, ×1.241 with nothing peeled, ×1.212 with all but it.
// Returns the loops peeled.
#include <llvm/Analysis/AssumptionCache.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/LoopIterator.h>
#include <llvm/Analysis/ScalarEvolution.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/Dominators.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/Utils/LoopPeel.h>
#include <llvm/Transforms/Utils/LoopSimplify.h>
#include <llvm/Transforms/Utils/LoopUtils.h>
#include <llvm/Transforms/Utils/ValueMapper.h>
// The bytes of `key_of`'s stores that every way from `l`'s head to each of its latches stores
// (a must-analysis over the loop's blocks in reverse postorder, back edges left out).
static bool stores_on_every_way(Loop *l, LoopInfo &li, DominatorTree &dt,
                                const DenseMap<const Instruction *, unsigned> &key_of) {
  auto keep_common = [](std::set<unsigned> &in, const std::set<unsigned> &other) {
    std::set<unsigned> both;
    for (unsigned k : in)
      if (other.count(k)) both.insert(k);
    in.swap(both);
  };
  LoopBlocksRPO rpo(l);
  rpo.perform(&li);
  DenseMap<const BasicBlock *, std::set<unsigned>> out;
  for (BasicBlock *bb : rpo) {
    std::set<unsigned> in;
    bool first = true;
    if (bb != l->getHeader())
      for (BasicBlock *p : predecessors(bb)) {
        auto o = out.find(p);
        if (!l->contains(p) || dt.dominates(bb, p) || o == out.end()) continue;
        if (first) {
          in = o->second;
          first = false;
        } else {
          keep_common(in, o->second);
        }
      }
    for (Instruction &i : *bb)
      if (auto k = key_of.find(&i); k != key_of.end()) in.insert(k->second);
    out[bb] = std::move(in);
  }
  SmallVector<BasicBlock *, 4> latches;
  l->getLoopLatches(latches);
  if (latches.empty()) return false;
  std::set<unsigned> all = out[latches[0]];
  for (BasicBlock *x : latches) keep_common(all, out[x]);
  return !all.empty();
}

extern "C" unsigned csi_peel_probed_loops(LLVMValueRef fn, LLVMValueRef *probes,
                                          const unsigned *keys, unsigned n, unsigned max_size) {
  Function *f = unwrap<Function>(fn);
  if (any_of(*f, [](BasicBlock &bb) { return bb.hasAddressTaken(); })) return 0;
  DenseMap<const Instruction *, unsigned> key_of;
  for (unsigned k = 0; k < n; ++k) key_of[unwrap<Instruction>(probes[k])] = keys[k];
  DominatorTree dt(*f);
  LoopInfo li(dt);
  TargetLibraryInfoImpl tlii(Triple(f->getParent()->getTargetTriple()));
  TargetLibraryInfo tli(tlii, f);
  AssumptionCache ac(*f);
  ScalarEvolution se(*f, tli, ac, dt, li);
  SmallVector<Loop *, 8> loops(li.getLoopsInPreorder());
  unsigned peeled = 0;
  for (Loop *l : reverse(loops)) {
    unsigned size = 0;
    for (BasicBlock *bb : l->blocks()) size += bb->size();
    // As LLVM's unroller: no `noduplicate` call or `indirectbr` (isSafeToClone).
    if (size > max_size || !l->isSafeToClone()) continue;
    if (!stores_on_every_way(l, li, dt, key_of)) continue;
    // Simplified, and its whole nest in LCSSA form: `peelLoop` simplifies the parent of the
    // loop it peels with LCSSA preserved, which needs the parent in that form.
    simplifyLoop(l, &dt, &li, &se, &ac, nullptr, false);
    formLCSSARecursively(*l->getOutermostLoop(), dt, &li, &se);
    if (!canPeel(l)) continue;
    ValueToValueMapTy vmap;
    if (!peelLoop(l, 1, &li, &se, dt, &ac, true, vmap)) continue;
    ++peeled;
    // The peeled copy's stores are the same bytes' (an enclosing loop's test reads them).
    SmallVector<std::pair<const Instruction *, unsigned>, 16> copies;
    for (auto it = vmap.begin(); it != vmap.end(); ++it) {
      auto k = key_of.find(dyn_cast<Instruction>(it->first));
      Value *to = it->second;
      if (k != key_of.end())
        if (auto *i = dyn_cast_or_null<Instruction>(to)) copies.push_back({i, k->second});
    }
    for (auto &[i, k] : copies) key_of[i] = k;
  }
  return peeled;
}

// A switchable function's instrumented body or replica that nothing can enter any more (see
// `stub_dead_variants`): its code goes, a trap stands in for it. The symbol stays, with the
// replica's patchable entry (prologue data) and its subprogram, for `csi tracing` and the
// reader, which find a switchable function's pieces by their symbols.
extern "C" void csi_stub_body(LLVMValueRef fn) {
  Function *f = unwrap<Function>(fn);
  LLVMContext &ctx = f->getContext();
  for (BasicBlock &bb : *f) bb.dropAllReferences();
  while (!f->empty()) f->begin()->eraseFromParent();
  BasicBlock *b = BasicBlock::Create(ctx, "csi.never", f);
  IRBuilder<> ir(b);
  CallInst *trap = ir.CreateIntrinsic(Intrinsic::trap, {}, {});
  if (DISubprogram *sp = f->getSubprogram())
    trap->setDebugLoc(DILocation::get(ctx, sp->getLine(), 0, sp));
  ir.CreateUnreachable();
}
