// The bundle readers of report/ (bundle::load, the campaign's case properties) on hand-made bundles
// whose files or folders are symbolic links leading out of the bundle: each is refused with one line
// naming it, and never read (what the outside file holds appears nowhere).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "fixtures/probe/paths.hpp"
#include "report/bundle.hpp"
#include "report/campaign.hpp"
#include "results/junit.hpp"

namespace fs = std::filesystem;

namespace cts {
namespace {

constexpr const char* kSecret = "SECRET-OUTSIDE-THE-BUNDLE";

void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// A small valid bundle in `dir`: one suite with its gtest XML, a fingerprint, a check.json.
void make_bundle(const fs::path& dir) {
  bundle::Manifest m;
  m.gpucts_version = "0.1.0";
  m.created = "2026-12-03T00:00:00Z";
  m.host = "node1";
  m.verdict = "pass";
  bundle::SuiteRun s;
  s.name = "gpucts_version";
  s.status = bundle::SuiteStatus::passed;
  s.xml = {"gtest/gpucts_version.xml"};
  m.suites.push_back(s);
  write_file(dir / "manifest.json", bundle::to_json(m).dump(2));
  junit::Case c;
  c.binary = "gpucts_version";
  c.suite = "Version";
  c.name = "Parses";
  write_file(dir / "junit.xml", junit::write({c}, "test"));
  write_file(dir / "gtest" / "gpucts_version.xml", junit::write({c}, "gtest"));
  write_file(dir / "fingerprints" / "node1.json", R"({"schema": "gpucts.fingerprint/1", "host": "node1"})");
  write_file(dir / "check.json", R"({"verdict": "pass", "findings": []})");
}

// A file outside every bundle that a reader would accept if it read it: its text carries kSecret.
struct Outside {
  fs::path dir;
  explicit Outside(const fs::path& root) : dir(root / "outside") {
    make_bundle(dir);  // valid files of every kind, each with the secret in it
    junit::Case c;
    c.binary = "gpucts_version";
    c.suite = "Version";
    c.name = kSecret;
    write_file(dir / "junit.xml", junit::write({c}, "test"));
    write_file(dir / "check.json", std::string(R"({"verdict": "pass", "reason": ")") + kSecret + "\"}");
    write_file(dir / "fingerprints" / "node1.json",
               std::string(R"({"schema": "gpucts.fingerprint/1", "host": ")") + kSecret + "\"}");
    write_file(dir / "gtest" / "gpucts_version.xml", junit::write({c}, "gtest"));
  }
};

// bundle::load's one-line error, or "" where it read the bundle.
std::string load_error(const fs::path& dir) {
  try {
    bundle::load(dir.string());
  } catch (const bundle::BundleError& e) {
    return e.what();
  }
  return "";
}

void expect_refused(const std::string& error, const std::string& file) {
  EXPECT_NE(error.find(": " + file + ": refused, not read: "), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << "one line: " << error;
  EXPECT_EQ(error.find(kSecret), std::string::npos) << "the outside file was read: " << error;
}

TEST(BundleLinks, AValidBundleReads) {
  ScratchDir tmp("bundle-links");
  const fs::path b = fs::path(tmp.path()) / "bundle";
  make_bundle(b);
  EXPECT_EQ(load_error(b), "");
}

// A top-level file of the bundle that is a link to a file outside it.
TEST(BundleLinks, AFileLinkedFromOutsideIsRefused) {
  ScratchDir tmp("bundle-links");
  const Outside out(tmp.path());
  for (const char* file : {"manifest.json", "junit.xml", "check.json", "fingerprints/node1.json"}) {
    const fs::path b = fs::path(tmp.path()) / ("bundle-" + fs::path(file).stem().string());
    make_bundle(b);
    fs::remove(b / file);
    fs::create_symlink(out.dir / file, b / file);
    expect_refused(load_error(b), file);
  }
}

// A folder of the bundle (gtest/, fingerprints/) that is a link to a folder outside it.
TEST(BundleLinks, ASubdirectoryLinkedFromOutsideIsRefused) {
  ScratchDir tmp("bundle-links");
  const Outside out(tmp.path());
  for (const char* folder : {"gtest", "fingerprints"}) {
    const fs::path b = fs::path(tmp.path()) / (std::string("bundle-") + folder);
    make_bundle(b);
    fs::remove_all(b / folder);
    fs::create_symlink(out.dir / folder, b / folder);
    const std::string error = load_error(b);
    EXPECT_NE(error.find(std::string(": refused, not read: a symbolic link: ") + folder), std::string::npos)
        << error;
    EXPECT_EQ(error.find(kSecret), std::string::npos) << error;
  }
}

// A link that points back into the bundle is refused as well: a bundle's files are files.
TEST(BundleLinks, ALinkInsideTheBundleIsRefusedToo) {
  ScratchDir tmp("bundle-links");
  const fs::path b = fs::path(tmp.path()) / "bundle";
  make_bundle(b);
  fs::rename(b / "check.json", b / "check-real.json");
  fs::create_symlink("check-real.json", b / "check.json");
  expect_refused(load_error(b), "check.json");
}

// bundle_file itself: inside, a link out, an absolute path, "..", a missing file.
TEST(BundleLinks, BundleFileNamesWhyItRefuses) {
  ScratchDir tmp("bundle-links");
  const Outside out(tmp.path());
  const fs::path b = fs::path(tmp.path()) / "bundle";
  make_bundle(b);
  fs::create_symlink(out.dir / "check.json", b / "elsewhere.json");
  EXPECT_EQ(bundle::bundle_file(b.string(), "gtest/gpucts_version.xml"),
            (b / "gtest/gpucts_version.xml").string());
  auto why = [&](const std::string& rel) {
    try {
      bundle::bundle_file(b.string(), rel);
    } catch (const bundle::BundleError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(why("elsewhere.json").find("elsewhere.json: refused, not read: a symbolic link"),
            std::string::npos);
  EXPECT_NE(why((out.dir / "check.json").string()).find("refused, not read: an absolute path"),
            std::string::npos);
  EXPECT_NE(why("../outside/check.json").find("refused, not read: '..' in the path"), std::string::npos);
  EXPECT_NE(why("gtest/none.xml").find("gtest/none.xml: no such file"), std::string::npos);
}

// The campaign reads each bundle's gtest XML again for the cases' properties: through the same door.
TEST(BundleLinks, TheCampaignRefusesALinkedGtestFile) {
  ScratchDir tmp("bundle-links");
  const Outside out(tmp.path());
  const fs::path b = fs::path(tmp.path()) / "bundle";
  make_bundle(b);
  bundle::Bundle loaded = bundle::load(b.string());
  fs::remove(b / "gtest" / "gpucts_version.xml");
  fs::create_symlink(out.dir / "gtest" / "gpucts_version.xml", b / "gtest" / "gpucts_version.xml");
  try {
    campaign::case_properties(loaded);
    ADD_FAILURE() << "a linked gtest XML was read";
  } catch (const bundle::BundleError& e) {
    expect_refused(e.what(), "gtest/gpucts_version.xml");
  }
}

}  // namespace
}  // namespace cts
