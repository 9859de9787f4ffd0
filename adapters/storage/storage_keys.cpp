// The storage layout and the key rules every object store enforces.
#include "adapters/storage/object_store.hpp"

namespace ingestd::storage_keys {

std::string document(const std::string& tenant_id, const std::string& document_id,
                     const std::string& ext) {
  return tenant_id + "/documents/" + document_id + "." + ext;
}

std::string transcription(const std::string& tenant_id, const std::string& ingestion_id) {
  return tenant_id + "/ingestions/" + ingestion_id + "/transcription-output.json";
}

std::string preprocessed(const std::string& tenant_id, const std::string& ingestion_id,
                         const std::string& ext) {
  return tenant_id + "/ingestions/" + ingestion_id + "/preprocessed." + ext;
}

std::string page_render(const std::string& tenant_id, const std::string& document_id, int index) {
  return tenant_id + "/review/pages/" + document_id + "/page-" + std::to_string(index) + ".png";
}

std::vector<std::string> document_prefixes(const std::string& tenant_id,
                                           const std::string& document_id) {
  return {tenant_id + "/documents/" + document_id + ".",
          tenant_id + "/review/pages/" + document_id + "/", "documents/" + document_id + ".",
          "review/pages/" + document_id + "/"};
}

std::vector<std::string> ingestion_prefixes(const std::string& tenant_id,
                                            const std::string& ingestion_id) {
  return {tenant_id + "/ingestions/" + ingestion_id + "/", "ingestions/" + ingestion_id + "/"};
}

result<void> validate_key(const std::string& key) {
  auto bad = [&](const char* why) {
    return error::make_permanent("storage.bad_key", "invalid object key '" + key + "': " + why);
  };
  if (key.empty())
    return bad("empty");
  if (key.size() > 1024)
    return bad("longer than 1024 bytes");
  if (key.front() == '/')
    return bad("absolute path");
  for (unsigned char c : key) {
    if (c < 0x20 || c == 0x7F)
      return bad("control character");
    if (c == '\\')
      return bad("backslash");
  }
  size_t start = 0;
  while (start <= key.size()) {
    auto end = key.find('/', start);
    if (end == std::string::npos)
      end = key.size();
    auto segment = std::string_view{key}.substr(start, end - start);
    if (segment.empty())
      return bad("empty path segment");
    if (segment == "." || segment == "..")
      return bad("'.' or '..' segment");
    start = end + 1;
  }
  return {};
}

} // namespace ingestd::storage_keys
