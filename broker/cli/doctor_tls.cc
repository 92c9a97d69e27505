// termbridge doctor's TLS check: the broker's certificate (tls_cert) parses,
// is valid now and for a while yet, names every address and host name its
// agents dial or check, and belongs to tls_key; the client CA (mTLS) parses.
// An agent that meets a certificate without its name gets PM_TERM_TIMEOUT in
// the connect phase (docs/troubleshooting.md), which says nothing of names.
#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "broker/cli/doctor_checks.h"

namespace termbridge::doctor {
namespace {

using X509Ptr = std::unique_ptr<X509, decltype(&X509_free)>;
using KeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

X509Ptr ReadCertificate(const std::string& path) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_file(path.c_str(), "r"), BIO_free);
  if (!bio) return X509Ptr(nullptr, X509_free);
  return X509Ptr(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), X509_free);
}

KeyPtr ReadKey(const std::string& path) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_file(path.c_str(), "r"), BIO_free);
  if (!bio) return KeyPtr(nullptr, EVP_PKEY_free);
  return KeyPtr(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr), EVP_PKEY_free);
}

std::string TimeText(const ASN1_TIME* time) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  if (!bio || ASN1_TIME_print(bio.get(), time) != 1) return "?";
  char* data = nullptr;
  long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(size));
}

// The subjectAltName entries, as "DNS:x" and "IP:y".
std::vector<std::string> AltNames(X509* cert) {
  std::vector<std::string> names;
  auto* general =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (general == nullptr) return names;
  for (int i = 0; i < sk_GENERAL_NAME_num(general); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(general, i);
    if (name->type == GEN_DNS) {
      const ASN1_STRING* text = name->d.dNSName;
      names.push_back(absl::StrCat(
          "DNS:", std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(text)),
                              static_cast<size_t>(ASN1_STRING_length(text)))));
    } else if (name->type == GEN_IPADD) {
      const ASN1_OCTET_STRING* ip = name->d.iPAddress;
      char text[INET6_ADDRSTRLEN] = {};
      int family = ASN1_STRING_length(ip) == 4 ? AF_INET : AF_INET6;
      if (inet_ntop(family, ASN1_STRING_get0_data(ip), text, sizeof(text)) != nullptr) {
        names.push_back(absl::StrCat("IP:", text));
      }
    }
  }
  GENERAL_NAMES_free(general);
  return names;
}

bool IsIpLiteral(const std::string& name) {
  in6_addr scratch;
  return inet_pton(AF_INET, name.c_str(), &scratch) == 1 ||
         inet_pton(AF_INET6, name.c_str(), &scratch) == 1;
}

}  // namespace

std::vector<std::string> TlsNamesFor(const std::vector<std::string>& listen, bool containers_here,
                                     const std::vector<std::string>& extra) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  auto add = [&](const std::string& name) {
    if (!name.empty() && seen.insert(name).second) names.push_back(name);
  };
  bool exposed = false;
  for (const std::string& address : listen) {
    std::string host = address.substr(0, address.rfind(':'));
    if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    bool loopback = host == "localhost" || host == "::1" || absl::StartsWith(host, "127.");
    if (!loopback) exposed = true;
    if (host.empty() || host == "0.0.0.0" || host == "::") continue;
    add(host);
  }
  if (exposed && containers_here) add("host.containers.internal");
  for (const std::string& name : extra) add(name);
  return names;
}

std::vector<Finding> CheckTls(const TlsInputs& in) {
  std::vector<Finding> findings;
  if (in.cert.empty()) {
    findings.push_back(
        {"tls", Status::kOk,
         "no TLS (tls_cert is not set): fine on loopback, where the broker allows it", ""});
    return findings;
  }
  const std::string remake =
      "make it again with the names agents use: deploy/make-credentials.sh NAME-OR-ADDRESS... "
      "(docs/operating.md#broker-on-a-laptop--agent-in-compose), then restart the broker and "
      "copy ca.pem to the agents if the CA changed";
  X509Ptr cert = ReadCertificate(in.cert);
  if (!cert) {
    findings.push_back({"tls.certificate", Status::kFail,
                        absl::StrCat("tls_cert ", in.cert, " cannot be read as a PEM certificate"),
                        remake});
    return findings;
  }
  std::time_t now = in.now != 0 ? in.now : std::time(nullptr);
  const ASN1_TIME* not_before = X509_get0_notBefore(cert.get());
  const ASN1_TIME* not_after = X509_get0_notAfter(cert.get());
  std::time_t soon = now + static_cast<std::time_t>(in.warn_days_before_expiry) * 86400;
  if (X509_cmp_time(not_before, &now) > 0) {
    findings.push_back(
        {"tls.certificate", Status::kFail,
         absl::StrCat("tls_cert ", in.cert, " is not valid before ", TimeText(not_before)),
         "check this host's clock, or make a certificate valid now"});
  } else if (X509_cmp_time(not_after, &now) < 0) {
    findings.push_back({"tls.certificate", Status::kFail,
                        absl::StrCat("tls_cert ", in.cert, " expired on ", TimeText(not_after),
                                     ": agents refuse it"),
                        absl::StrCat("renew it: deploy/make-credentials.sh --force makes a new CA, "
                                     "certificate and agent token (copy ca.pem and agent-token "
                                     "to the agents again)")});
  } else if (X509_cmp_time(not_after, &soon) < 0) {
    findings.push_back({"tls.certificate", Status::kWarn,
                        absl::StrCat("tls_cert ", in.cert, " expires on ", TimeText(not_after)),
                        "renew it before then: deploy/make-credentials.sh --force"});
  } else {
    findings.push_back({"tls.certificate", Status::kOk,
                        absl::StrCat("tls_cert ", in.cert, " is valid until ", TimeText(not_after)),
                        ""});
  }

  const std::vector<std::string> alt_names = AltNames(cert.get());
  const std::string listed =
      alt_names.empty() ? "no subjectAltName" : absl::StrJoin(alt_names, ", ");
  std::vector<std::string> missing;
  for (const std::string& name : in.names) {
    bool has = IsIpLiteral(name)
                   ? X509_check_ip_asc(cert.get(), name.c_str(), 0) == 1
                   : X509_check_host(cert.get(), name.c_str(), name.size(), 0, nullptr) == 1;
    if (!has) missing.push_back(name);
  }
  if (!missing.empty()) {
    findings.push_back({"tls.names", Status::kFail,
                        absl::StrCat("the certificate lacks ", absl::StrJoin(missing, ", "),
                                     ", which agents dial or check; it names ", listed),
                        remake});
  } else if (in.names.empty()) {
    findings.push_back({"tls.names", Status::kOk,
                        absl::StrCat("the certificate names ", listed,
                                     " (give --tls-name NAME to check the names agents dial)"),
                        ""});
  } else {
    findings.push_back({"tls.names", Status::kOk,
                        absl::StrCat("the certificate names ", absl::StrJoin(in.names, ", "),
                                     " (all of: ", listed, ")"),
                        ""});
  }

  SecretFileRules key_rules;
  key_rules.required = true;
  key_rules.readable_in_private_dir = false;
  Finding key_mode = CheckSecretFile("tls.key", "tls_key", in.key, key_rules);
  if (key_mode.status == Status::kFail) {
    findings.push_back(key_mode);
  } else if (KeyPtr key = ReadKey(in.key); !key) {
    findings.push_back({"tls.key", Status::kFail,
                        absl::StrCat("tls_key ", in.key, " cannot be read as a PEM private key"),
                        remake});
  } else if (X509_check_private_key(cert.get(), key.get()) != 1) {
    findings.push_back(
        {"tls.key", Status::kFail,
         absl::StrCat("tls_key ", in.key, " does not belong to tls_cert ", in.cert),
         "give the key the certificate was made for (broker.key next to broker.pem)"});
  } else {
    findings.push_back(key_mode);
  }

  if (!in.client_ca.empty()) {
    if (ReadCertificate(in.client_ca)) {
      findings.push_back({"tls.client_ca", Status::kOk,
                          absl::StrCat("tls_client_ca ", in.client_ca,
                                       " parses: agents need a certificate it signed"),
                          ""});
    } else {
      findings.push_back(
          {"tls.client_ca", Status::kFail,
           absl::StrCat("tls_client_ca ", in.client_ca, " cannot be read as a PEM certificate"),
           "point tls_client_ca at the CA's PEM file (ca.pem)"});
    }
  }
  return findings;
}

}  // namespace termbridge::doctor
