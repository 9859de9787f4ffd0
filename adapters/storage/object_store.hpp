// The storage port: objects by key, with the storage key layout. Implemented by
// filesystem_store (a directory) and s3_store (S3 over the HTTP engine).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "messages/result.hpp"

namespace ingestd {

/// The storage layout: where each object of a document or ingestion lives. Every key starts with
/// the document's tenant ("{tenant}/documents/{id}.pdf"), so that a bucket policy or an IAM
/// condition can keep tenants apart by prefix. Keys are stored on the rows that use them
/// (document.file_path, the transcription's paths), so the keys written before the tenant led
/// them ("documents/{id}.pdf", "ingestions/{id}/...") keep working as they are.
namespace storage_keys {
std::string document(const std::string& tenant_id, const std::string& document_id,
                     const std::string& ext);
std::string transcription(const std::string& tenant_id, const std::string& ingestion_id);
std::string preprocessed(const std::string& tenant_id, const std::string& ingestion_id,
                         const std::string& ext);
/// The review desk's render of a PDF page (a cache: made again when missing).
std::string page_render(const std::string& tenant_id, const std::string& document_id, int index);
/// Every prefix under which objects of the document live (its original, the desk's page
/// renders), in this layout and in the one before the tenant led the keys.
std::vector<std::string> document_prefixes(const std::string& tenant_id,
                                           const std::string& document_id);
/// The same for an ingestion (its transcription, its preprocessed scan).
std::vector<std::string> ingestion_prefixes(const std::string& tenant_id,
                                            const std::string& ingestion_id);
/// Rejects empty keys, absolute paths, "..", "." and empty segments, backslashes and control
/// characters; returns an error naming the problem.
result<void> validate_key(const std::string& key);
} // namespace storage_keys

/// Asynchronous: every call returns at once and calls its callback exactly once, from another
/// thread. A missing object is a permanent error with code "storage.not_found".
class object_store {
public:
  virtual ~object_store() = default;

  /// Reads a whole object; larger than `max_bytes` is a permanent "storage.too_large" error.
  virtual void get(std::string key, size_t max_bytes, callback<std::string> done) = 0;

  /// Writes an object atomically: readers see the old object or the whole new one.
  virtual void put(std::string key, std::string bytes, std::string content_type,
                   callback<void> done)
      = 0;

  virtual void exists(std::string key, callback<bool> done) = 0;

  /// Deletes an object; deleting a missing object succeeds (erasure and pruning repeat safely).
  virtual void remove(std::string key, callback<void> done) = 0;

  /// Every key that starts with `prefix`, in no particular order.
  virtual void list(std::string prefix, callback<std::vector<std::string>> done) = 0;

  /// "filesystem" or "s3", for logs.
  virtual std::string name() const = 0;
};

} // namespace ingestd
