-- Release 2.0.0: ICD-10 chapter blocks for each injury category.
ALTER TABLE injury_category ADD COLUMN icd10_block TEXT;

UPDATE injury_category SET icd10_block = CASE code
    WHEN 'BLUNT' THEN 'T14'
    WHEN 'BURN' THEN 'T20-T32'
    WHEN 'CSPINE' THEN 'S10-S19'
    WHEN 'CARDIAC' THEN 'I46'
    WHEN 'CRUSH' THEN 'T79.5'
    WHEN 'FRACT' THEN 'T14.2'
    WHEN 'LACER' THEN 'T14.1'
    WHEN 'PENET' THEN 'T14.1'
END;

UPDATE triage_level SET max_wait_minutes = 30 WHERE code = 'T3';
