#include "result_recorder.h"

namespace bulkhead {

StoreResultRecorder::StoreResultRecorder(std::string database, Pooling pooling)
    : store_(std::move(database), "record", pooling) {}

int StoreResultRecorder::Record(const std::vector<AttemptResult>& results,
                                const std::string& node) {
  return store_.Get().Record(results, node);
}

void StoreResultRecorder::Reset() { store_.Reset(); }

}  // namespace bulkhead
