// local_matcher: every rule, the strongest kind per candidate, no match, determinism, and the
// samples (credit note cn01, invoice inv01 and its scan) linked as the main job shows them.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "adapters/matching/features.hpp"
#include "adapters/matching/local_matcher.hpp"
#include "tests/unit/matching/matching_samples.hpp"

using namespace ingestd;

namespace {

using test::id;

match_document doc(uint64_t n, match_features f) {
  match_document d;
  d.id = id(n);
  d.tenant_id = id(999);
  d.file_name = "doc" + std::to_string(n);
  d.features = std::move(f);
  return d;
}

match_features invoice(const std::string& number, const std::string& party, double total,
                       std::string date = "2024-03-15") {
  match_features f;
  f.kind = "invoice";
  f.number = normalize_number(number);
  f.counterparty = party;
  f.normalized_counterparty = normalize_counterparty(party);
  f.total = total;
  f.currency = "EUR";
  f.date = std::move(date);
  f.searchable_text = "invoice " + number + " " + party;
  f.text_hash = sha256_hex(f.searchable_text);
  return f;
}

std::vector<match_edge> decide(const match_document& d, const std::vector<match_document>& cs,
                               local_matcher_options o = {}) {
  local_matcher m{o};
  std::vector<match_edge> out;
  int calls = 0;
  m.decide(d, cs, [&](result<std::vector<match_edge>> r) {
    ++calls;
    ASSERT_TRUE(r.ok());
    out = std::move(*r);
  });
  EXPECT_EQ(calls, 1); // synchronous, exactly once
  return out;
}

using test::read_sample;

match_document sample(uint64_t n, const std::string& base) {
  auto d = doc(n, describe_for_matching(read_sample(base + ".json"), read_sample(base + ".txt")));
  d.file_name = base;
  return d;
}

} // namespace

TEST(local_rules, duplicate_by_content) {
  auto a = doc(1, invoice("INV-1", "Acme Inc.", 100));
  auto b = doc(2, invoice("INV-1", "Acme Inc.", 100));
  auto e = decide(a, {b});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].other, id(2));
  EXPECT_EQ(e[0].kind, match_kind::duplicate);
  EXPECT_DOUBLE_EQ(e[0].confidence, 1.0);
  EXPECT_NE(e[0].reason.find("identical content"), std::string::npos);
}

TEST(local_rules, same_invoice_number_counterparty_and_total) {
  auto a = doc(1, invoice("INV-2024-0117", "Acme Office Supplies Inc.", 3529.46));
  auto scan = invoice("INV 2024 0117", "ACME Ofice Supplies, Inc", 3529.46 * 1.005); // OCR noise
  scan.text_hash = sha256_hex("scan");
  auto e = decide(a, {doc(2, scan)});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].kind, match_kind::same_invoice);
  EXPECT_DOUBLE_EQ(e[0].confidence, 0.95);
  EXPECT_NE(e[0].reason.find("INV20240117"), std::string::npos) << e[0].reason;
  // A total beyond the 1% tolerance, or another counterparty, is another invoice.
  auto off = scan;
  off.total = 3529.46 * 1.02;
  EXPECT_TRUE(decide(a, {doc(3, off)}).empty());
  auto other = scan;
  other.normalized_counterparty = "weber logistik";
  EXPECT_TRUE(decide(a, {doc(4, other)}).empty());
  // An unknown total lowers the confidence.
  auto unknown = scan;
  unknown.total.reset();
  auto u = decide(a, {doc(5, unknown)});
  ASSERT_EQ(u.size(), 1u);
  EXPECT_DOUBLE_EQ(u[0].confidence, 0.8);
}

TEST(local_rules, credit_note_either_direction) {
  auto inv = doc(1, invoice("RE-24-00891", "Müller & Söhne GmbH", 2000));
  auto cn_f = invoice("G-2024-017", "Müller und Söhne GmbH", -238.40);
  cn_f.kind = "credit_note";
  cn_f.references = {"RE2400891"};
  auto cn = doc(2, cn_f);
  for (auto [from, to] : {std::pair{inv, cn}, std::pair{cn, inv}}) {
    auto e = decide(from, {to});
    ASSERT_EQ(e.size(), 1u);
    EXPECT_EQ(e[0].other, to.id);
    EXPECT_EQ(e[0].kind, match_kind::credit_note);
    EXPECT_DOUBLE_EQ(e[0].confidence, 0.95);
    EXPECT_NE(e[0].reason.find("refers to invoice RE2400891"), std::string::npos) << e[0].reason;
  }
  // A reference to a number of another supplier is a coincidence.
  cn_f.normalized_counterparty = "weber logistik";
  EXPECT_TRUE(decide(doc(3, cn_f), {inv}).empty());
}

TEST(local_rules, purchase_order_either_direction) {
  auto po_f = invoice("PO-2024-0042", "Globex Corporation", 500);
  po_f.kind = "purchase_order";
  auto inv_f = invoice("INV-77", "Acme Inc.", 2000);
  inv_f.references = {"PO20240042"};
  auto po = doc(1, po_f);
  auto inv = doc(2, inv_f);
  for (auto [from, to] : {std::pair{inv, po}, std::pair{po, inv}}) {
    auto e = decide(from, {to});
    ASSERT_EQ(e.size(), 1u);
    EXPECT_EQ(e[0].kind, match_kind::purchase_order);
    EXPECT_DOUBLE_EQ(e[0].confidence, 0.75); // the PO names the buyer, the invoice the supplier
  }
}

TEST(local_rules, related_by_counterparty_amount_and_date) {
  auto a = doc(1, invoice("A-1", "Weber Logistik GmbH", 1000, "2024-03-01"));
  auto b = doc(2, invoice("A-2", "Weber Logistik", 1005, "2024-03-10"));
  auto e = decide(a, {b});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].kind, match_kind::related);
  EXPECT_DOUBLE_EQ(e[0].confidence, 0.6);
  EXPECT_NE(e[0].reason.find("9 days apart"), std::string::npos) << e[0].reason;
  // Outside the date window, or with min_confidence above it, nothing.
  EXPECT_TRUE(decide(a, {doc(3, invoice("A-3", "Weber Logistik", 1000, "2024-05-01"))}).empty());
  local_matcher_options strict;
  strict.min_confidence = 0.7;
  EXPECT_TRUE(decide(a, {b}, strict).empty());
}

TEST(local_rules, no_match_and_self) {
  auto a = doc(1, invoice("A-1", "Acme", 100));
  EXPECT_TRUE(decide(a, {}).empty());
  EXPECT_TRUE(decide(a, {doc(2, invoice("B-7", "Globex", 250, "2023-01-01"))}).empty());
  EXPECT_TRUE(decide(a, {a}).empty()); // a document is not its own candidate
  match_features empty;
  EXPECT_TRUE(decide(doc(3, empty), {doc(4, empty)}).empty());
}

TEST(local_rules, each_candidate_once_with_the_strongest_kind_in_a_stable_order) {
  auto a = doc(1, invoice("INV-1", "Acme Inc.", 100));
  auto same = invoice("INV-1", "Acme Inc.", 100);
  same.text_hash = "other";
  auto dup = invoice("INV-1", "Acme Inc.", 100);
  auto rel = invoice("INV-2", "Acme Inc.", 100);
  // The same candidate listed twice, once as a weaker variant: one edge, the strongest.
  std::vector<match_document> cs{doc(5, rel), doc(3, same), doc(2, dup), doc(3, rel)};
  auto e = decide(a, cs);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].other, id(2));
  EXPECT_EQ(e[0].kind, match_kind::duplicate);
  EXPECT_EQ(e[1].other, id(3));
  EXPECT_EQ(e[1].kind, match_kind::same_invoice);
  EXPECT_EQ(e[2].other, id(5));
  EXPECT_EQ(e[2].kind, match_kind::related);
  // Deterministic: the candidates' order does not change the answer.
  std::vector<match_document> reversed(cs.rbegin(), cs.rend());
  auto r = decide(a, reversed);
  ASSERT_EQ(r.size(), e.size());
  for (size_t i = 0; i < e.size(); ++i) {
    EXPECT_EQ(r[i].other, e[i].other);
    EXPECT_EQ(r[i].kind, e[i].kind);
    EXPECT_EQ(r[i].reason, e[i].reason);
  }
}

TEST(local_rules, helpers) {
  EXPECT_TRUE(amounts_agree(100, 101, 0.01));
  EXPECT_FALSE(amounts_agree(100, 101.5, 0.01));
  EXPECT_TRUE(amounts_agree(0, 0.004, 0.01));
  EXPECT_EQ(days_between("2024-02-28", "2024-03-01"), 2);
  EXPECT_EQ(days_between("2024-03-01", "2023-03-01"), 366);
  EXPECT_FALSE(days_between("2024-13-01", "2024-03-01"));
  EXPECT_FALSE(days_between("", "2024-03-01"));
  EXPECT_GT(match_kind_rank(match_kind::duplicate), match_kind_rank(match_kind::same_invoice));
  EXPECT_GT(match_kind_rank(match_kind::credit_note), match_kind_rank(match_kind::purchase_order));
}

TEST(local_samples, credit_note_and_scan_link_to_inv01) {
  // The extractions and transcriptions of samples/ as the local extractor and Tesseract give them.
  auto inv = sample(1, "inv01_en_classic");
  auto scan = sample(2, "inv01_en_classic_scan");
  auto cn = sample(3, "cn01_en_credit_note");
  auto from_cn = decide(cn, {inv, scan});
  ASSERT_EQ(from_cn.size(), 2u);
  for (const auto& e : from_cn) {
    EXPECT_EQ(e.kind, match_kind::credit_note);
    EXPECT_DOUBLE_EQ(e.confidence, 0.95);
    EXPECT_NE(e.reason.find("credit note CN20240031 refers to invoice INV20240117"),
              std::string::npos)
        << e.reason;
  }
  auto from_inv = decide(inv, {scan, cn});
  ASSERT_EQ(from_inv.size(), 2u);
  EXPECT_EQ(from_inv[0].other, scan.id);
  EXPECT_EQ(from_inv[0].kind, match_kind::same_invoice);
  EXPECT_EQ(from_inv[1].other, cn.id);
  EXPECT_EQ(from_inv[1].kind, match_kind::credit_note);
}

namespace {

std::string read_file(const std::string& rel) {
  const char* src = std::getenv("INGESTD_SOURCE_DIR");
  std::ifstream in{std::string{src ? src : "."} + "/" + rel};
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

} // namespace

TEST(local_samples, distinct_invoices_of_the_corpora_do_not_match) {
  // Sixteen different invoices (the fixture corpus' six, with their truth as the extraction, and
  // the ten hand-written texts of the extractor's tests): each is an invoice with its own
  // number and no references, and no two of them are linked.
  std::vector<match_document> docs;
  std::vector<std::string> numbers;
  for (int i = 1; i <= 6; ++i) {
    auto truth = read_file("tests/fixtures/corpus/truth/inv0" + std::to_string(i) + ".json");
    ASSERT_FALSE(truth.empty());
    // The truth's "text" is the transcription; its fields are what a perfect extraction gives.
    auto at = truth.find("\"text\":");
    ASSERT_NE(at, std::string::npos);
    std::string text;
    for (size_t k = truth.find('"', at + 7) + 1; k < truth.size() && truth[k] != '"'; ++k) {
      if (truth[k] == '\\' && k + 1 < truth.size()) {
        ++k;
        text += truth[k] == 'n' ? '\n' : truth[k];
        continue;
      }
      text += truth[k];
    }
    docs.push_back(
        doc(uint64_t{100} + static_cast<uint64_t>(i), describe_for_matching(truth, text)));
  }
  for (const char* name :
       {"ch_chf", "de_columns", "de_din", "de_ocr_at", "en_gb_stacked", "en_merged_columns",
        "en_two_rates", "en_us_columns", "kleinunternehmer", "us_shipto"}) {
    auto base = std::string{"tests/unit/extraction/texts/"} + name;
    docs.push_back(doc(200 + docs.size(),
                       describe_for_matching(read_file(base + ".json"), read_file(base + ".txt"))));
  }
  ASSERT_EQ(docs.size(), 16u);
  for (const auto& d : docs) {
    SCOPED_TRACE(d.file_name + " " + d.features.number);
    EXPECT_EQ(d.features.kind, "invoice");
    EXPECT_FALSE(d.features.number.empty());
    EXPECT_TRUE(d.features.references.empty()) << d.features.references.front();
    EXPECT_FALSE(d.features.normalized_counterparty.empty());
    std::vector<match_document> others;
    for (const auto& o : docs)
      if (o.id != d.id)
        others.push_back(o);
    auto e = decide(d, others);
    EXPECT_TRUE(e.empty()) << e.front().reason;
  }
}
