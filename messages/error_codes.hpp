// The error codes that code branches on, in one place: the producer and every reader name the
// same constant, so a misspelt code is a compile error rather than a silent change of behaviour.
// The text stays what logs, last_error and HTTP answers show. Codes that are only reported (never
// compared) are written where they are made.
#pragma once

#include <string_view>

#include "messages/error.hpp"

namespace ingestd::errc {

// -- the job's lifecycle ---------------------------------------------------------------------

/// A step ran past its deadline (no message for the job's step timeout).
inline constexpr std::string_view step_timeout = "step.timeout";
/// A step's CPU work threw; the CPU worker goes on.
inline constexpr std::string_view step_exception = "step.exception";
/// No CPU worker took the work within its deadline: the node's fault, the work is given back.
inline constexpr std::string_view cpu_busy = "cpu.busy";
/// A provider's limits held the request past limits.max_wait_seconds: given back too.
inline constexpr std::string_view provider_busy = "provider.busy";
/// The tenant's monthly budget is spent and its work waits (usage.budget_action "hold"): given
/// back, visible again after the error's retry_after_ms, no attempt counted.
inline constexpr std::string_view budget_held = "budget.held";
/// A claim found its item's crashes at the limit and failed it.
inline constexpr std::string_view poison = "poison";

// -- OCR -------------------------------------------------------------------------------------

/// The OCR's worker pool was full: given back.
inline constexpr std::string_view ocr_busy = "ocr.busy";
/// OCR ran past transcription.timeout_seconds (a timeout of the small size class escalates).
inline constexpr std::string_view ocr_deadline = "ocr.deadline";

// -- decoder helpers (adapters/sandbox) ---------------------------------------------------------

/// The helper process that parsed or rendered the document died (a signal, an unexpected exit,
/// an answer that breaks the protocol). Transient: counted as an attempt, poison at the last.
inline constexpr std::string_view decode_crashed = "decode.crashed";
/// The helper ran out of its memory limit (RLIMIT_AS) on the document.
inline constexpr std::string_view decode_out_of_memory = "decode.out_of_memory";
/// The helper overran the work's deadline (or its CPU-time limit) and was killed.
inline constexpr std::string_view decode_timeout = "decode.timeout";
/// The caller stopped the call (its work was cancelled): the helper was ended, nothing counted.
inline constexpr std::string_view decode_cancelled = "decode.cancelled";

// -- office conversion (adapters/convert) ----------------------------------------------------

/// LibreOffice died on the document (a signal). Transient: counted like a decoder's crash.
inline constexpr std::string_view convert_crashed = "convert.crashed";
/// The conversion overran its deadline and its processes were killed; counted likewise.
inline constexpr std::string_view convert_timeout = "convert.timeout";

// -- cancellation ----------------------------------------------------------------------------

/// A fenced outcome refused because the work item has a cancel request (`ingestd cancel` came
/// while the job ran): the job records `cancelled` instead.
inline constexpr std::string_view work_cancelled = "work.cancelled";

// -- storage and HTTP ------------------------------------------------------------------------

/// No object under the key.
inline constexpr std::string_view storage_not_found = "storage.not_found";
/// A response body over the caller's bound.
inline constexpr std::string_view http_too_large = "http.too_large";

// -- extraction ------------------------------------------------------------------------------

/// The document does not fit the model's context: the fallback extractor takes over.
inline constexpr std::string_view llm_context_exceeded = "llm.context_exceeded";

// -- the database ----------------------------------------------------------------------------

/// The server could not be reached or the connection broke.
inline constexpr std::string_view pg_connection = "pg.connection";
/// The COMMIT's answer was lost (SQLSTATE 08007): whether it happened must be read again.
inline constexpr std::string_view pg_commit_unknown = "pg.08007";
/// The statement ran past its statement_timeout (SQLSTATE 57014).
inline constexpr std::string_view pg_query_canceled = "pg.57014";
/// A blocking call to the database passed its deadline.
inline constexpr std::string_view db_timeout = "db.timeout";
/// A statement answered with fewer results than asked for.
inline constexpr std::string_view db_no_result = "db.no_result";

// -- intake (HTTP answers are chosen by these) ---------------------------------------------

inline constexpr std::string_view intake_too_large = "intake.too_large";
inline constexpr std::string_view intake_unsupported_type = "intake.unsupported_type";
inline constexpr std::string_view intake_containers_disabled = "intake.containers_disabled";
inline constexpr std::string_view intake_empty = "intake.empty";
inline constexpr std::string_view intake_invalid_source = "intake.invalid_source";
inline constexpr std::string_view intake_invalid_priority = "intake.invalid_priority";
inline constexpr std::string_view intake_invalid_batch = "intake.invalid_batch";

// -- the review desk (HTTP answers are chosen by these) ------------------------------------

inline constexpr std::string_view review_not_found = "review.not_found";
inline constexpr std::string_view review_page_out_of_range = "review.page_out_of_range";
inline constexpr std::string_view review_conflict = "review.conflict";
inline constexpr std::string_view review_invalid = "review.invalid";
inline constexpr std::string_view review_unknown_provider = "review.unknown_provider";
inline constexpr std::string_view review_provider_unavailable = "review.provider_unavailable";
inline constexpr std::string_view review_schema_invalid = "review.schema_invalid";
inline constexpr std::string_view review_unreadable = "review.unreadable";
inline constexpr std::string_view review_unsupported_type = "review.unsupported_type";

} // namespace ingestd::errc

namespace ingestd {

/// True when the database could not be reached or went away during the call (connection loss,
/// a server shutting down or starting up): the system's own failure, never the document's.
inline bool database_unavailable(const error& err) {
  return err.code == errc::pg_connection || err.code.rfind("pg.08", 0) == 0
         || err.code == "pg.57P01" || err.code == "pg.57P02" || err.code == "pg.57P03";
}

/// True when a decoder helper or an office conversion died on the document (crashed, out of
/// memory, past its deadline):
/// counted like a worker's crash, an attempt that becomes final, as poison, at max_attempts.
inline bool decoder_crash(const error& err) {
  return err.code == errc::decode_crashed || err.code == errc::decode_out_of_memory
         || err.code == errc::decode_timeout || err.code == errc::convert_crashed
         || err.code == errc::convert_timeout;
}

/// True for work that never started for lack of the node's or a provider's capacity: no CPU
/// worker within the deadline ("cpu.busy", "ocr.busy"), or a provider's line full past its
/// longest wait ("provider.busy"). The node was loaded; the work is not at fault.
inline bool never_started(const error& err) {
  return err.code == errc::cpu_busy || err.code == errc::ocr_busy
         || err.code == errc::provider_busy;
}

} // namespace ingestd
