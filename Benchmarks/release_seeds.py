#!/usr/bin/env python3
"""Two releases of a realistic seed project, for the delta and compression figures.

    Benchmarks/release_seeds.py OUT [--packages N] [--change PERCENT] [--schema-change]

writes OUT/v1 and OUT/v2, each a Migrations folder `reseed package --migrations` builds:
a package index (text-heavy reference data: summaries, descriptions, keywords, a few
indexes), like the one the issue measured. v2 is v1 with PERCENT % of the packages
changed (default 2): half of them updated (a new version string, a download count and,
for one in three, a new summary), three in ten inserted, two in ten deleted, along with
their maintainer links. The output depends only on the arguments: the random generator
is seeded, so two runs write identical files.

With --schema-change both releases also have triggers, and v2 changes the schema the way a real
upstream release does: a table added (licenses), its triggers rewritten, an index added.
With the default 60,000 packages the v1 seed is about 35 MB with 60,000 + 24,000 + 90,000 rows.
"""
import argparse
import csv
import os
import random

WORDS = (
    "able about account acid across act addition adjustment advertisement after again against agreement air all "
    "almost among amount amusement and angle angry animal answer ant any apparatus apple approval arch argument arm "
    "army art as at attack attempt attention attraction authority automatic awake baby back bad bag balance ball band "
    "base basin basket bath be beautiful because bed bee before behaviour belief bell bent berry between bird birth "
    "bit bite bitter black blade blood blow blue board boat body boiling bone book boot bottle box boy brain brake "
    "branch brass bread breath brick bridge bright broken brother brown brush bucket building bulb burn burst "
    "business but butter button by cache cake camera canvas card care carriage cart cat cause certain chain chalk "
    "chance change cheap cheese chemical chest chief chin church circle clean clear clock cloth cloud coal coat cold "
    "collar colour comb come comfort committee common company comparison competition complete complex condition "
    "connection conscious control cook copper copy cord cork cotton cough country cover cow crack credit crime "
    "cruel crush cry cup current curtain curve cushion parser server client stream buffer async tensor graph "
    "query schema index vector matrix codec socket thread kernel driver plugin bundle widget render shader"
).split()
LICENSES = ["MIT", "Apache-2.0", "BSD-3-Clause", "GPL-3.0-only", "LGPL-2.1-or-later", "MPL-2.0", "ISC", "Unlicense"]
LANGUAGES = ["Python", "Rust", "Swift", "Go", "C", "C++", "JavaScript", "Ruby", "Haskell", "OCaml"]

SCHEMA = """CREATE TABLE package (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    version TEXT NOT NULL,
    summary TEXT NOT NULL,
    description TEXT NOT NULL,
    keywords TEXT NOT NULL,
    homepage TEXT,
    license TEXT NOT NULL,
    language TEXT NOT NULL,
    downloads INTEGER NOT NULL,
    released TEXT NOT NULL
);
CREATE TABLE maintainer (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE
);
CREATE TABLE package_maintainer (
    package_id INTEGER NOT NULL REFERENCES package(id),
    maintainer_id INTEGER NOT NULL REFERENCES maintainer(id),
    role TEXT NOT NULL,
    PRIMARY KEY (package_id, maintainer_id)
) WITHOUT ROWID;
"""
INDEXES = """CREATE INDEX package_license ON package(license, language);
CREATE INDEX package_downloads ON package(downloads);
CREATE INDEX package_maintainer_by_maintainer ON package_maintainer(maintainer_id);
"""


def sentence(rng, low, high):
    words = [rng.choice(WORDS) for _ in range(rng.randint(low, high))]
    return " ".join(words).capitalize() + "."


def paragraph(rng, sentences):
    return " ".join(sentence(rng, 8, 18) for _ in range(sentences))


def package(rng, pid):
    name = "%s-%s-%d" % (rng.choice(WORDS), rng.choice(WORDS), pid)
    return {
        "id": pid,
        "name": name,
        "version": "%d.%d.%d" % (rng.randint(0, 9), rng.randint(0, 30), rng.randint(0, 60)),
        "summary": sentence(rng, 6, 14),
        "description": paragraph(rng, rng.randint(2, 5)),
        "keywords": ",".join(sorted({rng.choice(WORDS) for _ in range(rng.randint(2, 6))})),
        "homepage": "https://%s.example.org/%s" % (rng.choice(WORDS), name) if rng.random() < 0.8 else "",
        "license": rng.choice(LICENSES),
        "language": rng.choice(LANGUAGES),
        "downloads": rng.randint(0, 5_000_000),
        "released": "20%02d-%02d-%02d" % (rng.randint(10, 26), rng.randint(1, 12), rng.randint(1, 28)),
    }

# --schema-change: v1's triggers, then v2's rewrites and additions.
TRIGGERS_V1 = """CREATE TRIGGER package_downloads_check BEFORE UPDATE OF downloads ON package
WHEN new.downloads < 0 BEGIN SELECT RAISE(ABORT, 'negative downloads'); END;
CREATE TRIGGER package_gone AFTER DELETE ON package BEGIN DELETE FROM package_maintainer WHERE package_id = old.id; END;
"""
TRIGGERS_V2 = """CREATE TRIGGER package_downloads_check BEFORE UPDATE OF downloads ON package
WHEN new.downloads < old.downloads BEGIN SELECT RAISE(ABORT, 'downloads only grow'); END;
CREATE TRIGGER package_gone AFTER DELETE ON package BEGIN
  DELETE FROM package_maintainer WHERE package_id = old.id;
  DELETE FROM license_note WHERE spdx = old.license AND NOT EXISTS (SELECT 1 FROM package WHERE license = old.license);
END;
CREATE TRIGGER package_license_known BEFORE INSERT ON package
WHEN NOT EXISTS (SELECT 1 FROM license_note WHERE spdx = new.license) BEGIN SELECT RAISE(ABORT, 'unknown license'); END;
"""
ADDED_V2 = """CREATE TABLE license_note (spdx TEXT PRIMARY KEY, name TEXT NOT NULL, osi_approved INTEGER NOT NULL, note TEXT) WITHOUT ROWID;
CREATE INDEX package_released ON package(released);
"""


def links(rng, pid, maintainers):
    chosen = sorted(rng.sample(range(1, maintainers + 1), rng.randint(1, 2)))
    return [(pid, m, "owner" if i == 0 else "maintainer") for i, m in enumerate(chosen)]


def write_release(folder, packages, maintainers, package_links, extra_steps=()):
    migrations = os.path.join(folder, "Migrations")
    os.makedirs(migrations, exist_ok=True)
    with open(os.path.join(migrations, "0001_schema.sql"), "w") as f:
        f.write(SCHEMA)
    columns = ["id", "name", "version", "summary", "description", "keywords", "homepage", "license", "language",
               "downloads", "released"]
    with open(os.path.join(migrations, "0002_maintainer.csv"), "w", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(["id", "name", "email"])
        out.writerows(maintainers)
    with open(os.path.join(migrations, "0003_package.csv"), "w", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(columns)
        for pid in sorted(packages):
            out.writerow([packages[pid][c] for c in columns])
    with open(os.path.join(migrations, "0004_package_maintainer.csv"), "w", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(["package_id", "maintainer_id", "role"])
        for pid in sorted(package_links):
            out.writerows(package_links[pid])
    with open(os.path.join(migrations, "0005_indexes.sql"), "w") as f:
        f.write(INDEXES)
    for name, text in extra_steps:
        with open(os.path.join(migrations, name), "w") as f:
            f.write(text)


def license_notes(rng):
    rows = ["INSERT INTO license_note VALUES ('%s', '%s license', %d, '%s');" % (spdx, spdx, rng.randint(0, 1), sentence(rng, 8, 20).replace("'", "''"))
            for spdx in LICENSES]
    return "\n".join(rows) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--packages", type=int, default=60_000)
    parser.add_argument("--change", type=float, default=2.0, help="percent of packages changed in v2")
    parser.add_argument("--schema-change", action="store_true", help="v2 also adds a table and an index and rewrites the triggers")
    args = parser.parse_args()

    rng = random.Random(20261123)
    maintainer_count = max(10, args.packages * 2 // 5)
    maintainers = [(m, "%s %s" % (rng.choice(WORDS).capitalize(), rng.choice(WORDS).capitalize()),
                    "m%d@%s.example.net" % (m, rng.choice(WORDS))) for m in range(1, maintainer_count + 1)]
    packages = {pid: package(rng, pid) for pid in range(1, args.packages + 1)}
    package_links = {pid: links(rng, pid, maintainer_count) for pid in packages}
    write_release(os.path.join(args.out, "v1"), packages, maintainers, package_links,
                  [("0006_triggers.sql", TRIGGERS_V1)] if args.schema_change else [])

    changed = int(args.packages * args.change / 100)
    ids = sorted(packages)
    picked = rng.sample(ids, changed)
    updated, deleted = picked[: changed // 2], picked[changed // 2: changed // 2 + changed * 2 // 10]
    inserted = changed - len(updated) - len(deleted)
    for pid in updated:
        p = dict(packages[pid])
        p["version"] = "%d.%d.%d" % (rng.randint(0, 9), rng.randint(0, 30), rng.randint(0, 60))
        p["downloads"] += rng.randint(1, 50_000)
        if rng.random() < 1 / 3:
            p["summary"] = sentence(rng, 6, 14)
        packages[pid] = p
    for pid in deleted:
        del packages[pid]
        del package_links[pid]
    for pid in range(args.packages + 1, args.packages + 1 + inserted):
        packages[pid] = package(rng, pid)
        package_links[pid] = links(rng, pid, maintainer_count)
    v2_steps = [("0006_license_note.sql", ADDED_V2 + license_notes(rng)), ("0007_triggers.sql", TRIGGERS_V2)] if args.schema_change else []
    write_release(os.path.join(args.out, "v2"), packages, maintainers, package_links, v2_steps)
    print("v1: %d packages; v2: %d updated, %d deleted, %d inserted" % (args.packages, len(updated), len(deleted), inserted))


if __name__ == "__main__":
    main()
