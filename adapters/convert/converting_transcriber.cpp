// converting_transcriber: office documents to PDF on the CPU pool, then the wrapped reader.
#include "adapters/convert/converting_transcriber.hpp"

#include <utility>

#include "messages/error_codes.hpp"
#include "messages/file_type.hpp"

namespace ingestd {

converting_transcriber::converting_transcriber(std::shared_ptr<transcriber> reader,
                                               cpu_executor& cpu, office_converter_options options,
                                               std::chrono::seconds timeout)
    : reader_(std::move(reader)), cpu_(cpu), options_(std::move(options)), timeout_(timeout) {}

void converting_transcriber::transcribe(transcription_request request,
                                        callback<transcription> done) {
  auto type = detect_file_type(request.bytes);
  if (!type || !needs_conversion(type->kind))
    return reader_->transcribe(std::move(request), std::move(done));
  auto timeout = request.timeout.count() > 0 ? request.timeout : timeout_;
  auto shared = std::make_shared<transcription_request>(std::move(request));
  auto finish = std::make_shared<callback<transcription>>(std::move(done));
  cpu_job job;
  // The conversion waits for a worker no longer than it may take.
  job.deadline = std::chrono::steady_clock::now() + timeout;
  job.expired = [finish, timeout] {
    (*finish)(error::make_transient(std::string{errc::cpu_busy},
                                    "no CPU worker was free to convert the document within "
                                        + std::to_string(timeout.count()) + " s"));
  };
  job.run = [this, shared, finish, type = *type, timeout] {
    if (shared->started)
      shared->started();
    auto began = std::chrono::steady_clock::now();
    auto pdf = convert_to_pdf(shared->bytes, type, options_, began + timeout);
    if (!pdf)
      return (*finish)(pdf.error());
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::steady_clock::now() - began)
                    .count();
    // The reader's own deadline starts when it does (a CPU reader calls `started` again).
    transcription_request read = std::move(*shared);
    read.bytes = *pdf;
    read.mime_type = "application/pdf";
    auto kept = std::make_shared<std::string>(std::move(*pdf));
    reader_->transcribe(std::move(read), [finish, kept, type, took](result<transcription> t) {
      if (t) {
        t->derived_file = std::move(*kept);
        t->derived_ext = "pdf";
        t->metadata.emplace_back("converted_from", std::string{type.ext});
        t->metadata.emplace_back("conversion_ms", std::to_string(took));
      }
      (*finish)(std::move(t));
    });
  };
  cpu_.submit(std::move(job));
}

} // namespace ingestd
