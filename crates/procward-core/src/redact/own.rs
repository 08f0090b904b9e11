//! procward's own token rules: vendor formats the gitleaks rule set does not find in the
//! shapes tools print them (a token on its own, without the vendor's name beside it). Each
//! token is known by its prefix, its keyword for the prefilter.

use super::Rule;

/// A rule of a whole-match token: `keywords` lower case, as the prefilter compares them.
const fn token(id: &'static str, regex: &'static str, keywords: &'static [&'static str]) -> Rule {
  Rule { id, regex, keywords, entropy: 0.0, secret_group: 0, allow_secret: &[], allow_match: &[], stopwords: &[] }
}

pub(super) static RULES: &[Rule] = &[
  token("procward-jwt", r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", &["eyj"]),
  token("procward-anthropic", r"sk-ant-[a-z0-9]{2,8}-[A-Za-z0-9_-]{20,}", &["sk-ant-"]),
  // A project, service-account or admin key may be glued to what precedes it; a bare `sk-` keeps its word boundary.
  token("procward-openai", r"(?:sk-(?:proj|svcacct|admin)-|\bsk-)[A-Za-z0-9_-]{20,}", &["sk-"]),
  token(
    "procward-github",
    r"gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,}",
    &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
  ),
  token("procward-gitlab", r"gl(?:pat|dt|rt|ptt|cbt)-[A-Za-z0-9_-]{20,}", &["glpat-", "gldt-", "glrt-", "glptt-", "glcbt-"]),
  token("procward-slack", r"xox[abposre]-[A-Za-z0-9-]{10,}", &["xox"]),
  token("procward-slack-webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/]+", &["hooks.slack.com"]),
  token("procward-aws-access-key", r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b", &["akia", "asia", "agpa", "aida", "aroa", "anpa"]),
  token("procward-google-api-key", r"AIza[0-9A-Za-z_-]{35}", &["aiza"]),
  token("procward-npm", r"npm_[A-Za-z0-9]{36}\b", &["npm_"]),
  token("procward-huggingface", r"hf_[A-Za-z0-9]{30,}", &["hf_"]),
  token("procward-google-oauth", r"\bya29\.[A-Za-z0-9_-]{20,}", &["ya29."]),
  token("procward-groq", r"gsk_[A-Za-z0-9]{40,}", &["gsk_"]),
  token("procward-sendgrid", r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}", &["sg."]),
  token(
    "procward-vendor-prefixed",
    r"(?:lin_api_|shp(?:at|ca|pa|ss)_|dckr_pat_|whsec_|npm_config__authToken=|\b(?:gl(?:c|sa)_|hv[sbr]\.|figd_|xapp-))[A-Za-z0-9_.=-]{16,}",
    &[
      "lin_api_",
      "shpat_",
      "shpca_",
      "shppa_",
      "shpss_",
      "dckr_pat_",
      "whsec_",
      "npm_config__authtoken=",
      "glc_",
      "glsa_",
      "hvs.",
      "hvb.",
      "hvr.",
      "figd_",
      "xapp-",
    ],
  ),
  token("procward-stripe", r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}", &["sk_live_", "sk_test_", "rk_live_", "rk_test_"]),
  token("procward-pypi", r"pypi-AgE[A-Za-z0-9_-]{50,}", &["pypi-age"]),
  token("procward-bitbucket", r"ATBB[A-Za-z0-9]{32}", &["atbb"]),
  token("procward-newrelic", r"NR(?:AK|JS|II)-[A-Z0-9]{19,32}", &["nrak-", "nrjs-", "nrii-"]),
  token("procward-notion", r"ntn_[A-Za-z0-9]{40,}|secret_[A-Za-z0-9]{43}\b", &["ntn_", "secret_"]),
  token("procward-replicate", r"r8_[A-Za-z0-9]{37}", &["r8_"]),
  token("procward-xai", r"xai-[A-Za-z0-9]{60,}", &["xai-"]),
  token("procward-tavily", r"tvly-(?:dev-)?[A-Za-z0-9]{32}", &["tvly-"]),
  token("procward-langsmith", r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}", &["lsv2_"]),
  token("procward-contentful", r"CFPAT-[A-Za-z0-9_-]{43}", &["cfpat-"]),
  token("procward-netlify", r"nfp_[A-Za-z0-9]{36}", &["nfp_"]),
  token(
    "procward-doppler",
    r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}",
    &["dp.pt.", "dp.st.", "dp.sa.", "dp.ct.", "dp.scim.", "dp.audit."],
  ),
  token("procward-mailgun", r"key-[a-f0-9]{32}\b", &["key-"]),
  token("procward-square", r"sq0(?:atp|csp)-[A-Za-z0-9_-]{22,43}", &["sq0atp-", "sq0csp-"]),
  token("procward-linear", r"lin_(?:api|oauth)_[A-Za-z0-9]{40,}", &["lin_api_", "lin_oauth_"]),
  token("procward-figma", r"fig[dhu]_[A-Za-z0-9_-]{40,}", &["figd_", "figh_", "figu_"]),
  token("procward-flutterwave", r"FLWSECK(?:_TEST)?-[a-f0-9]{32}-X", &["flwseck"]),
  token("procward-typeform", r"tfp_[A-Za-z0-9_=.-]{44,59}", &["tfp_"]),
  token("procward-heroku", r"HRKU-[A-Za-z0-9_-]{58,}", &["hrku-"]),
  token("procward-telegram", r"\d{8,10}:AA[A-Za-z0-9_-]{33}", &[":aa"]),
  // No literal: the regex runs on every text (a DFA pass).
  token("procward-discord", r"\b[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}\b", &[]),
];
