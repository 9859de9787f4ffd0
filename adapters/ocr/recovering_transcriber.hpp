// Task-specific recovery around a remote transcription provider (Document AI):
//   - a transcription below the quality threshold: the page is preprocessed with OpenCV on the
//     CPU pool and sent again; the better of the two is kept;
//   - a document the provider refuses for good (too large, too many pages, an unsupported type,
//     a request it rejects): the local provider transcribes it instead, with a warning.
#pragma once

#include <memory>
#include <string>

#include "adapters/ocr/ocr_options.hpp"
#include "adapters/ocr/transcriber.hpp"
#include "adapters/support/cpu_executor.hpp"

namespace ingestd {

/// True for a permanent refusal of this document by the provider that another provider may
/// not share: docai.too_large, docai.too_many_pages, docai.http_400, ocr.too_large,
/// ocr.unsupported_type.
bool provider_refused(const error& err);

class recovering_transcriber final : public transcriber {
public:
  /// `cpu` must outlive this object and every transcription in flight. `limits` bound the
  /// decoding of a page for preprocessing.
  recovering_transcriber(std::shared_ptr<transcriber> remote, std::shared_ptr<transcriber> local,
                         cpu_executor& cpu, const document_limits& limits);

  void transcribe(transcription_request request, callback<transcription> done) override;
  std::string name() const override { return remote_->name(); }
  bool waits_for_cpu() const override { return remote_->waits_for_cpu(); }

private:
  std::shared_ptr<transcriber> remote_;
  std::shared_ptr<transcriber> local_;
  cpu_executor& cpu_;
  document_limits limits_;
};

} // namespace ingestd
