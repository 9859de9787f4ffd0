// Google Document AI (v1 processors:process) as a transcription provider, over the http_client
// port. Parses the proto3 JSON forms real responses take and classifies errors.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "adapters/http/http_client.hpp"
#include "adapters/ocr/transcriber.hpp"

namespace ingestd {

struct document_ai_options {
  /// The full process URL: https://{location}-documentai.googleapis.com/v1/projects/{p}/
  /// locations/{l}/processors/{id}:process (or a :process URL of a processor version).
  std::string endpoint;
  /// OAuth 2 access token sent as "Authorization: Bearer ..." (the daemon reads it from the
  /// environment). Never logged, never put in an error message.
  std::string access_token;
  std::chrono::milliseconds timeout{std::chrono::seconds(120)};
  /// Checked before sending: Document AI's online limit is 20 MiB.
  size_t max_file_bytes = size_t{20} * 1024 * 1024;
  bool enable_native_pdf_parsing = true;
  bool enable_image_quality_scores = true;
};

class document_ai_transcriber final : public transcriber {
public:
  /// `http` must outlive this object and every request in flight.
  document_ai_transcriber(http_client& http, document_ai_options options);

  /// `done` runs on the HTTP engine thread (parsing is cheap). Preprocessing is not done here:
  /// the result's quality lets the pipeline decide.
  void transcribe(transcription_request request, callback<transcription> done) override;
  std::string name() const override { return "document_ai"; }

private:
  http_client& http_;
  document_ai_options options_;
};

/// The request body (exposed for tests).
std::string document_ai_request_body(std::string_view bytes, std::string_view mime_type,
                                     const document_ai_options& options);

/// Parses a 200 response body. Errors: "docai.bad_response" (transient: a truncated or
/// malformed body is worth another try).
result<transcription> parse_document_ai_response(std::string_view body);

/// Maps a non-200 response to an error (permanent for size/page limits, 400, 401/403, 404;
/// transient for 408, 429 and 5xx, with Retry-After honoured).
error classify_document_ai_error(const http_response& response);

/// "quality/defect_blurry" -> "blurry", "quality/defect_text_too_small" -> "text_too_small";
/// other names lose only the "quality/defect_" prefix.
std::string map_document_ai_defect(std::string_view type);

} // namespace ingestd
