#!/usr/bin/env python3
"""A real-shaped database for figure 14 (`reseed init --from` + `reseed package`), written as SQL
for the sqlite3 CLI: a catalogue app's reference data with many tables, foreign keys, views,
triggers, plain, partial and expression indexes, an AUTOINCREMENT table, one FTS5 table of
DOCS documents (about 10 MB in all with the default), ANALYZE statistics and a user_version.
Deterministic (seeded), so two runs give the same database.

    python3 Benchmarks/real_shaped.py --docs 20000 | sqlite3 src.sqlite
"""
import argparse
import random
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--docs", type=int, default=20000)
args = parser.parse_args()
rng = random.Random(7)
syllables = ["ka", "lo", "mi", "ne", "sor", "tal", "ven", "qui", "ra", "dus", "pel", "em", "bro", "ix", "an", "ul"]
words = sorted({"".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(5000)})
weights = [1 / (rank + 1) for rank in range(len(words))]


def text(n):
    return " ".join(rng.choices(words, weights, k=n))


def q(s):
    return "'" + s.replace("'", "''") + "'"


out = sys.stdout
w = out.write
w("PRAGMA journal_mode = OFF;\nPRAGMA synchronous = OFF;\nBEGIN;\n")
w("""
CREATE TABLE region (id INTEGER PRIMARY KEY, code TEXT NOT NULL UNIQUE, name TEXT NOT NULL);
CREATE TABLE country (id INTEGER PRIMARY KEY, region_id INTEGER NOT NULL REFERENCES region(id), iso TEXT NOT NULL UNIQUE, name TEXT NOT NULL, population INTEGER);
CREATE TABLE publisher (id INTEGER PRIMARY KEY AUTOINCREMENT, country_id INTEGER REFERENCES country(id), name TEXT NOT NULL, founded INTEGER);
CREATE TABLE author (id INTEGER PRIMARY KEY, name TEXT NOT NULL, born INTEGER, country_id INTEGER REFERENCES country(id));
CREATE TABLE subject (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES subject(id), name TEXT NOT NULL);
CREATE TABLE work (id INTEGER PRIMARY KEY, publisher_id INTEGER REFERENCES publisher(id), subject_id INTEGER REFERENCES subject(id),
  title TEXT NOT NULL, year INTEGER, pages INTEGER, price REAL, summary TEXT,
  title_lower TEXT GENERATED ALWAYS AS (lower(title)) VIRTUAL);
CREATE TABLE work_author (work_id INTEGER NOT NULL REFERENCES work(id), author_id INTEGER NOT NULL REFERENCES author(id), role TEXT NOT NULL DEFAULT 'author',
  PRIMARY KEY (work_id, author_id)) WITHOUT ROWID;
CREATE TABLE edition (id INTEGER PRIMARY KEY, work_id INTEGER NOT NULL REFERENCES work(id), isbn TEXT, format TEXT CHECK (format IN ('print', 'ebook', 'audio')), released TEXT) STRICT;
CREATE TABLE tag (id INTEGER PRIMARY KEY, label TEXT NOT NULL COLLATE NOCASE UNIQUE);
CREATE TABLE work_tag (work_id INTEGER NOT NULL REFERENCES work(id), tag_id INTEGER NOT NULL REFERENCES tag(id), PRIMARY KEY (work_id, tag_id)) WITHOUT ROWID;
CREATE TABLE change_log (id INTEGER PRIMARY KEY AUTOINCREMENT, work_id INTEGER, note TEXT);
CREATE TABLE setting ("key" TEXT PRIMARY KEY, "value" ANY) STRICT;
CREATE VIRTUAL TABLE work_text USING fts5(title, body, tokenize = 'porter unicode61 remove_diacritics 2', prefix = '2');
""")
for i, code in enumerate(["EU", "NA", "SA", "AF", "AS", "OC"], 1):
    w(f"INSERT INTO region VALUES({i}, {q(code)}, {q(text(2).title())});\n")
for i in range(1, 201):
    w(f"INSERT INTO country VALUES({i}, {rng.randint(1, 6)}, {q('C%03d' % i)}, {q(text(2).title())}, {rng.randint(10**4, 10**9)});\n")
for i in range(1, 801):
    w(f"INSERT INTO publisher(country_id, name, founded) VALUES({rng.randint(1, 200)}, {q(text(3).title())}, {rng.randint(1700, 2020)});\n")
for i in range(1, 4001):
    w(f"INSERT INTO author VALUES({i}, {q(text(2).title())}, {rng.randint(1700, 2000)}, {rng.randint(1, 200)});\n")
for i in range(1, 301):
    parent = "NULL" if i <= 20 else str(rng.randint(1, i - 1))
    w(f"INSERT INTO subject VALUES({i}, {parent}, {q(text(2))});\n")
for i in range(1, 501):
    w(f"INSERT INTO tag VALUES({i}, {q(text(1) + str(i))});\n")
works = 9000
for i in range(1, works + 1):
    w(f"INSERT INTO work(id, publisher_id, subject_id, title, year, pages, price, summary) VALUES({i}, {rng.randint(1, 800)}, {rng.randint(1, 300)}, "
      f"{q(text(rng.randint(2, 6)).capitalize())}, {rng.randint(1800, 2025)}, {rng.randint(40, 900)}, {round(rng.uniform(2, 90), 2)}, {q(text(rng.randint(6, 18)).capitalize() + '.')});\n")
    for a in sorted(rng.sample(range(1, 4001), rng.randint(1, 3))):
        w(f"INSERT INTO work_author VALUES({i}, {a}, {q(rng.choice(['author', 'editor', 'translator']))});\n")
    for t in sorted(rng.sample(range(1, 501), rng.randint(0, 4))):
        w(f"INSERT INTO work_tag VALUES({i}, {t});\n")
    for _ in range(rng.randint(0, 2)):
        w(f"INSERT INTO edition(work_id, isbn, format, released) VALUES({i}, {q('978%010d' % rng.randrange(10**10))}, {q(rng.choice(['print', 'ebook', 'audio']))}, {q('%04d-%02d-01' % (rng.randint(1990, 2025), rng.randint(1, 12)))});\n")
for i in range(1, 21):
    w(f"INSERT INTO setting VALUES({q('option.' + str(i))}, {rng.choice([str(i), q(text(2)), str(i / 4)])});\n")
for i in range(1, args.docs + 1):
    w(f"INSERT INTO work_text(rowid, title, body) VALUES({i}, {q(text(rng.randint(3, 8)).capitalize())}, {q(text(rng.randint(12, 28)).capitalize() + '.')});\n")
w("""
CREATE INDEX country_region ON country(region_id);
CREATE INDEX publisher_country ON publisher(country_id);
CREATE INDEX author_name ON author(name COLLATE NOCASE);
CREATE INDEX work_publisher ON work(publisher_id);
CREATE INDEX work_subject_year ON work(subject_id, year DESC);
CREATE INDEX work_recent ON work(year) WHERE year >= 2000;
CREATE INDEX work_title_lower ON work(lower(title));
CREATE INDEX edition_work ON edition(work_id);
CREATE UNIQUE INDEX edition_isbn ON edition(isbn) WHERE isbn IS NOT NULL;
CREATE VIEW work_card AS SELECT w.id, w.title, p.name AS publisher, c.name AS country FROM work w LEFT JOIN publisher p ON p.id = w.publisher_id LEFT JOIN country c ON c.id = p.country_id;
CREATE VIEW author_count AS SELECT a.id, a.name, count(*) AS works FROM author a JOIN work_author wa ON wa.author_id = a.id GROUP BY a.id;
CREATE VIEW recent_work AS SELECT * FROM work WHERE year >= 2000;
CREATE TRIGGER work_logged AFTER UPDATE OF title ON work BEGIN INSERT INTO change_log(work_id, note) VALUES(new.id, 'title: ' || old.title); END;
CREATE TRIGGER work_deleted AFTER DELETE ON work BEGIN DELETE FROM work_author WHERE work_id = old.id; DELETE FROM work_tag WHERE work_id = old.id; END;
CREATE TRIGGER edition_checked BEFORE INSERT ON edition WHEN new.isbn IS NOT NULL AND length(new.isbn) <> 13 BEGIN SELECT RAISE(ABORT, 'isbn'); END;
INSERT INTO change_log(work_id, note) VALUES(1, 'imported');
COMMIT;
ANALYZE;
PRAGMA user_version = 7;
PRAGMA application_id = 1128353861;
""")
