// recovering_transcriber: the remote provider first; a refusal goes to the local provider, a
// poor result gets one more pass on a preprocessed page image.
#include "adapters/ocr/recovering_transcriber.hpp"

#include <chrono>
#include <utility>

#include "adapters/ocr/page_work.hpp"
#include "adapters/sandbox/decoder.hpp"

namespace ingestd {

namespace {

/// What one transcription keeps between its calls.
struct attempt {
  std::shared_ptr<const std::string> bytes;
  std::string mime_type;
  double quality_threshold = 0;
  bool allow_preprocessing = true;
  std::chrono::seconds timeout{0};
  call_context context;
  callback<transcription> done;

  transcription_request request(std::string body, std::string mime) const {
    transcription_request req;
    req.bytes = std::move(body);
    req.mime_type = std::move(mime);
    req.quality_threshold = quality_threshold;
    req.allow_preprocessing = false;
    req.timeout = timeout;
    req.context = context;
    return req;
  }
};

/// The single page of `bytes` as a preprocessed PNG, or empty when there is nothing to improve:
/// more than one page, a page with a text layer, or no preprocessing step the page calls for.
/// With decoder helpers the page is read in one of them; `trouble` tells why one failed.
std::string preprocessed_png(const std::shared_ptr<const std::string>& bytes,
                             const std::string& mime, const document_limits& limits,
                             cpu_executor& cpu, std::chrono::steady_clock::time_point deadline,
                             std::string& trouble) {
  auto decoder = cpu.decoder();
  if (!decoder)
    return encode_gray_png(preprocessed_page(bytes, mime, limits));
  auto image = sandbox::preprocess_page(*decoder, *bytes, mime, limits, deadline);
  if (!image) {
    trouble = image.error().describe();
    return {};
  }
  return encode_gray_png(*image);
}

} // namespace

bool provider_refused(const error& err) {
  if (!err.permanent())
    return false;
  for (const char* code : {"docai.too_large", "docai.too_many_pages", "docai.http_400",
                           "ocr.too_large", "ocr.unsupported_type"})
    if (err.code == code)
      return true;
  return false;
}

recovering_transcriber::recovering_transcriber(std::shared_ptr<transcriber> remote,
                                               std::shared_ptr<transcriber> local,
                                               cpu_executor& cpu, const document_limits& limits)
    : remote_(std::move(remote)), local_(std::move(local)), cpu_(cpu), limits_(limits) {}

void recovering_transcriber::transcribe(transcription_request request,
                                        callback<transcription> done) {
  auto a = std::make_shared<attempt>();
  a->bytes = std::make_shared<const std::string>(std::move(request.bytes));
  a->mime_type = request.mime_type;
  a->quality_threshold = request.quality_threshold;
  a->allow_preprocessing = request.allow_preprocessing;
  a->timeout = request.timeout;
  a->context = std::move(request.context);
  a->done = std::move(done);
  auto first = a->request(*a->bytes, a->mime_type);
  first.allow_preprocessing = a->allow_preprocessing;
  first.started = std::move(request.started);
  remote_->transcribe(std::move(first), [this, a](result<transcription> r) {
    if (!r) {
      if (!local_ || !provider_refused(r.error()))
        return a->done(std::move(r));
      // Refused for good by the remote provider: the local one takes the document.
      auto why = r.error().describe();
      auto req = a->request(*a->bytes, a->mime_type);
      req.allow_preprocessing = a->allow_preprocessing;
      return local_->transcribe(
          std::move(req),
          [a, why, name = local_->name(), remote = remote_->name()](result<transcription> t) {
            if (t)
              t->warnings.push_back(remote + " refused the document (" + why + "); transcribed by "
                                    + name);
            a->done(std::move(t));
          });
    }
    if (!a->allow_preprocessing || r->quality_score >= a->quality_threshold)
      return a->done(std::move(r));
    // Poor: preprocess the page on the CPU pool and send it once more.
    auto kept = std::make_shared<transcription>(std::move(*r));
    cpu_job job;
    job.deadline = std::chrono::steady_clock::now() + std::chrono::minutes{5};
    job.expired = [a, kept] { a->done(std::move(*kept)); };
    job.run = [this, a, kept, deadline = job.deadline] {
      std::string png, trouble;
      try {
        png = preprocessed_png(a->bytes, a->mime_type, limits_, cpu_, deadline, trouble);
      } catch (const std::exception&) {
        png.clear(); // a page OpenCV cannot clean up keeps the first reading
      }
      if (!trouble.empty())
        kept->warnings.push_back("the page could not be preprocessed (" + trouble
                                 + "); the first reading is kept");
      if (png.empty())
        return a->done(std::move(*kept));
      auto image = std::make_shared<std::string>(png);
      remote_->transcribe(a->request(std::move(png), "image/png"),
                          [a, kept, image](result<transcription> second) {
                            if (!second || second->quality_score <= kept->quality_score)
                              return a->done(std::move(*kept));
                            second->preprocessed = true;
                            second->derived_file = std::move(*image);
                            second->derived_ext = "png";
                            a->done(std::move(*second));
                          });
    };
    cpu_.submit(std::move(job));
  });
}

} // namespace ingestd
