// The two things the LLVM C API lacks for csi-cc: splitting a critical CFG edge (with PHI
// updates) and registering a new global variable's debug info with its compile unit.
#include <llvm-c/Core.h>
#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/DebugInfoMetadata.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>
#include <llvm/Transforms/Utils/BasicBlockUtils.h>

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
