-- A joinery_upsert table whose partition values hold a comma, a space and a quote, so a partition
-- predicate must be built from the values, not from the text of a partition spec:
-- python_tests/test_upsert.py runs it. Built only with --vars '{upsert_punctuated_partitions: true}'.
-- Run 1 writes three customers; run 2 (env var JOINERY_PUNCTUATED_RUN=2: an env var, not a var, so
-- that dbt parses only this file again) renames one in 'Paris, FR' and adds one in a new partition;
-- run 3 moves two customers to other cities (the partition column is not part of the key).
{{ config(
    enabled=var('upsert_punctuated_partitions', false), materialized='joinery_upsert',
    file_format='parquet', unique_key='customer_id', partition_by=['city']
) }}

{% if env_var('JOINERY_PUNCTUATED_RUN', '1') == '1' %}

    select * from values
        (1, 'Ada', 'Paris, FR'),
        (2, 'Bo', 'Paris, FR'),
        (3, 'Cy', "O'Hare, IL")
            as changes (customer_id, name, city)

{% elif env_var('JOINERY_PUNCTUATED_RUN', '1') == '2' %}

    select * from values
        (1, 'Ada Lovelace', 'Paris, FR'),
        (4, 'Di', 'Nice, FR')
            as changes (customer_id, name, city)

{% else %}

    select * from values
        (2, 'Bo', "O'Hare, IL"),
        (3, 'Cy', 'Nice, FR')
            as changes (customer_id, name, city)

{% endif %}
