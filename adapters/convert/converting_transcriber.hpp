// A transcriber that reads office and web documents (DOCX, XLSX, ODT, ODS, RTF, HTML) through
// the PDF LibreOffice converts them to (office_converter.hpp), on the CPU pool, and hands every
// other document to the provider it wraps unchanged. The PDF comes back with the transcription as
// its derived file (transcription::derived_file, "pdf"): the ingest stage stores it beside the
// original, which stays the document.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "adapters/convert/office_converter.hpp"
#include "adapters/ocr/transcriber.hpp"
#include "adapters/support/cpu_executor.hpp"

namespace ingestd {

class converting_transcriber final : public transcriber {
public:
  /// `cpu` must outlive this object and every transcription in flight. A request without its
  /// own timeout converts within `timeout`.
  converting_transcriber(std::shared_ptr<transcriber> reader, cpu_executor& cpu,
                         office_converter_options options, std::chrono::seconds timeout);

  void transcribe(transcription_request request, callback<transcription> done) override;
  std::string name() const override { return reader_->name(); }
  bool waits_for_cpu() const override { return reader_->waits_for_cpu(); }

private:
  std::shared_ptr<transcriber> reader_;
  cpu_executor& cpu_;
  office_converter_options options_;
  std::chrono::seconds timeout_;
};

} // namespace ingestd
