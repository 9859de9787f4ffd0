// The end-to-end setup: fresh schema, queue and storage per test; corpus documents registered as
// ingestion rows and their work items in bulk; daemons started against them.
#include "tests/support/daemon/e2e_setup.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "adapters/queue/postgres_queue.hpp"
#include "messages/uuid.hpp"
#include "tests/support/environment.hpp"

namespace ingestd::test {

namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in{p, std::ios::binary};
  if (!in)
    throw std::runtime_error("cannot read " + p.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct corpus_file {
  fs::path path;
  std::string ext;
  std::string mime;
};

std::vector<corpus_file> corpus(doc_kind kind) {
  fs::path dir = fs::path{source_dir()} / "tests/fixtures/corpus";
  switch (kind) {
  case doc_kind::text_pdf: {
    std::vector<corpus_file> out;
    for (auto name : {"inv01_en_classic.pdf", "inv02_de_modern.pdf", "inv03_en_compact.pdf",
                      "inv04_de_classic.pdf", "inv05_en_modern.pdf", "inv06_de_compact.pdf"})
      out.push_back({dir / name, "pdf", "application/pdf"});
    return out;
  }
  case doc_kind::scan_png: {
    std::vector<corpus_file> out;
    for (auto name : {"inv01_en_classic_scan.png", "inv03_en_compact_scan.png",
                      "inv05_en_modern_scan.png", "inv06_de_compact_scan.png"})
      out.push_back({dir / name, "png", "image/png"});
    return out;
  }
  case doc_kind::corrupt_pdf:
    return {{dir / "bad/truncated.pdf", "pdf", "application/pdf"}};
  }
  return {};
}

} // namespace

std::string pg_array(const std::vector<std::string>& items) {
  std::string out = "{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i)
      out += ',';
    out += items[i];
  }
  return out + "}";
}

e2e_setup::e2e_setup()
    : db_(std::make_unique<pg_schema>(true)), root_(make_temp_dir("ingestd-e2e")),
      queue_(unique_name("q")) {
  fs::create_directories(fs::path{root_} / "documents");
  // What `ingestd queues create` does for this configuration (the CLI test runs the command).
  for (const auto& [name, dead_letter, receives] :
       {std::tuple{queue_, queue_ + "-dlq", 0},
        std::tuple{match_queue_name(), match_queue_name() + "-dlq", 3},
        std::tuple{unpack_queue_name(), unpack_queue_name() + "-dlq", 3}})
    if (auto r = create_postgres_queue(db_->url(), name, dead_letter, receives); !r)
      throw std::runtime_error("creating queue " + name + ": " + r.error().describe());
}

std::string e2e_setup::match_queue_name() const {
  return queue_ + "-match";
}

std::string e2e_setup::unpack_queue_name() const {
  return queue_ + "-unpack";
}

e2e_setup::~e2e_setup() {
  std::error_code ec;
  fs::remove_all(root_, ec);
}

std::map<std::string, std::string> e2e_setup::daemon_env() const {
  return {
      {"INGESTD_DATABASE__URL", db_->url()},
      {"INGESTD_QUEUE__BACKEND", "postgres"},
      {"INGESTD_QUEUE__NAME", queue_},
      {"INGESTD_QUEUE__DEAD_LETTER_NAME", queue_ + "-dlq"},
      {"INGESTD_MATCHING__QUEUE_NAME", match_queue_name()},
      {"INGESTD_MATCHING__DEAD_LETTER_NAME", match_queue_name() + "-dlq"},
      {"INGESTD_CONTAINERS__QUEUE_NAME", unpack_queue_name()},
      {"INGESTD_CONTAINERS__DEAD_LETTER_NAME", unpack_queue_name() + "-dlq"},
      {"INGESTD_QUEUE__WAIT_TIME_SECONDS", "1"},
      {"INGESTD_STORAGE__BACKEND", "filesystem"},
      {"INGESTD_STORAGE__ROOT", root_},
      // A short lease for quick takeovers; the receive visibility and each extension follow it.
      {"INGESTD_WORKER__LEASE_SECONDS", "10"},
      {"INGESTD_WORKER__HEARTBEAT_RATE_SECONDS", "1"},
      {"INGESTD_WORKER__SHUTDOWN_GRACE_SECONDS", "60"},
      {"INGESTD_WORKER__SWEEPER_INTERVAL_SECONDS", "5"},
      {"INGESTD_TRANSCRIPTION__PROVIDER", "tesseract"},
      {"INGESTD_EXTRACTION__PROVIDER", "local"},
      {"INGESTD_ADMIN__PORT", "0"},
      {"INGESTD_INTAKE__PORT", "0"},
      {"INGESTD_LOG__FORMAT", "json"},
  };
}

std::vector<std::string> e2e_setup::add_documents(int n, doc_kind kind, const object_writer& write,
                                                  const std::string& tenant) {
  auto files = corpus(kind);
  std::vector<std::string> contents;
  contents.reserve(files.size());
  for (const auto& f : files)
    contents.push_back(read_file(f.path));
  std::vector<std::string> docs, ings, tenants, paths, mimes;
  for (int i = 0; i < n; ++i) {
    const auto& f = files[static_cast<size_t>(i) % files.size()];
    auto doc = uuid::v7().str();
    std::string key = "documents/" + doc + "." + f.ext;
    const auto& bytes = contents[static_cast<size_t>(i) % files.size()];
    if (write) {
      write(key, bytes, f.mime);
    } else {
      std::ofstream out{fs::path{root_} / key, std::ios::binary};
      out << bytes;
      if (!out)
        throw std::runtime_error("cannot write " + key);
    }
    docs.push_back(doc);
    ings.push_back(uuid::v7().str());
    sources_[ings.back()] = f.path.filename().string();
    tenants.push_back(tenant.empty() ? uuid::v4().str() : tenant);
    paths.push_back(key);
    mimes.push_back(f.mime);
  }
  // Content hashes are the document ids: every document is distinct.
  db_->query(
      "INSERT INTO document (id, tenant_id, content_hash, file_path, mime_type) "
      "SELECT d, t, d::text, p, m FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[]) "
      "AS x(d, t, p, m)",
      {pg_array(docs), pg_array(tenants), pg_array(paths), pg_array(mimes)});
  db_->query("INSERT INTO ingestion (id, document_id, uploaded_by) "
             "SELECT i, d, gen_random_uuid() FROM unnest($1::uuid[], $2::uuid[]) AS x(i, d)",
             {pg_array(ings), pg_array(docs)});
  // Each ingestion's work item, in progress and unclaimed, as intake writes it (its message is
  // the test's to send: enqueue()).
  db_->query(
      "INSERT INTO work_item (id, stage, document_id, tenant_id) "
      "SELECT i, 'ingest', d, t FROM unnest($1::uuid[], $2::uuid[], $3::uuid[]) AS x(i, d, t)",
      {pg_array(ings), pg_array(docs), pg_array(tenants)});
  return ings;
}

std::string e2e_setup::add_document_bytes(const std::string& bytes, const std::string& ext,
                                          const std::string& mime, const std::string& tenant) {
  auto doc = uuid::v7().str();
  auto ing = uuid::v7().str();
  std::string key = "documents/" + doc + "." + ext;
  std::ofstream out{fs::path{root_} / key, std::ios::binary};
  out << bytes;
  if (!out)
    throw std::runtime_error("cannot write " + key);
  db_->query("INSERT INTO document (id, tenant_id, content_hash, file_path, mime_type) "
             "VALUES ($1::uuid, $4::uuid, $1::text, $2, $3)",
             {doc, key, mime, tenant.empty() ? uuid::v4().str() : tenant});
  db_->query(
      "INSERT INTO ingestion (id, document_id, uploaded_by) VALUES ($1, $2, gen_random_uuid())",
      {ing, doc});
  db_->query("INSERT INTO work_item (id, stage, document_id, tenant_id) "
             "SELECT $1, 'ingest', d.id, d.tenant_id FROM document AS d WHERE d.id = $2",
             {ing, doc});
  return ing;
}

void e2e_setup::enqueue(const std::vector<std::string>& bodies) {
  // Bodies may be anything (poison tests): passed as one text[] parameter, each quoted.
  std::string arr = "{";
  for (size_t i = 0; i < bodies.size(); ++i) {
    if (i)
      arr += ',';
    arr += '"';
    for (char c : bodies[i]) {
      if (c == '"' || c == '\\')
        arr += '\\';
      arr += c;
    }
    arr += '"';
  }
  arr += '}';
  db_->query("INSERT INTO queue_message (id, queue_name, body) "
             "SELECT gen_random_uuid(), $1, b FROM unnest($2::text[]) AS x(b)",
             {queue_, arr});
}

std::unique_ptr<daemon_process> e2e_setup::start(const std::map<std::string, std::string>& extra) {
  auto env = daemon_env();
  for (const auto& [k, v] : extra)
    env[k] = v;
  auto log = root_ + "/daemon-" + std::to_string(++daemons_) + ".log";
  return std::make_unique<daemon_process>(env, log);
}

std::string e2e_setup::source_of(const std::string& ingestion_id) const {
  auto i = sources_.find(ingestion_id);
  return i == sources_.end() ? std::string{} : i->second;
}

int64_t e2e_setup::count(const std::string& sql,
                         const std::vector<std::optional<std::string>>& params) {
  return std::stoll(db_->scalar(sql, params));
}

int64_t e2e_setup::with_status(const std::string& status) {
  return count("SELECT count(*) FROM ingestion WHERE status = $1", {status});
}

std::string e2e_setup::logs() const {
  std::string out;
  for (int i = 1; i <= daemons_; ++i) {
    auto path = root_ + "/daemon-" + std::to_string(i) + ".log";
    std::ifstream in{path};
    std::stringstream ss;
    ss << in.rdbuf();
    auto text = ss.str();
    // The last 8 KB is where the trouble shows.
    if (text.size() > 8192)
      text = "...\n" + text.substr(text.size() - 8192);
    out.append("--- ").append(path).append(" ---\n").append(text).append("\n");
  }
  return out;
}

} // namespace ingestd::test
