#include "trainer/config/config_fields.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "trainer/config/train_config.pb.h"

namespace mnt::trainer {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::TextFormat;

void CollectPaths(const Descriptor* d, const TextFormat::ParseInfoTree* tree,
                  const std::string& prefix, std::set<std::string>* out) {
  for (int i = 0; i < d->field_count(); ++i) {
    const auto* field = d->field(i);
    if (field->is_repeated()) continue;  // TrainConfig has none
    const std::string path = absl::StrCat(prefix, field->name());
    if (tree->GetLocation(field, -1).line >= 0) out->insert(path);
    if (field->message_type() == nullptr) continue;
    // (The parser refuses a singular message given twice.)
    if (const TextFormat::ParseInfoTree* nested = tree->GetTreeForNested(field, -1)) {
      CollectPaths(field->message_type(), nested, path + ".", out);
    }
  }
}

// The file was already parsed (and any error reported) by MergeTextConfig;
// here errors only need to fail the call, not reach stderr.
class SilentErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
};

}  // namespace

absl::StatusOr<std::set<std::string>> FieldPathsInTextConfig(const std::string& text) {
  TextFormat::Parser parser;
  TextFormat::ParseInfoTree tree;
  parser.WriteLocationsTo(&tree);
  SilentErrors errors;
  parser.RecordErrorsTo(&errors);
  mantissa::TrainConfig config;
  if (!parser.ParseFromString(text, &config)) {
    return absl::InvalidArgumentError("not a valid TrainConfig text proto");
  }
  std::set<std::string> paths;
  CollectPaths(mantissa::TrainConfig::descriptor(), &tree, "", &paths);
  return paths;
}

}  // namespace mnt::trainer
