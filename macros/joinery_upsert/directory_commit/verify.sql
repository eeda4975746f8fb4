{#- Checking a written version before it is committed: its row count (and partitions) read back in
    one statement with the table's figures it must agree with. -#}

{% macro _upsert_verify_version(target, stage_sql, version_dir, plan, change_info, full_build, settings, changes) %}
    {#- The written version's facts (_upsert_version_facts) and, for a partitioned table, where each of
        its partitions lives; then the stage table is dropped (its files stay). A row count other than
        the one the changes imply (a partial or doubled write) fails the run: nothing was committed,
        the live table was never touched. -#}
    {% set partitions = plan.partition_columns | map(attribute='name') | list if change_info.partition_by else [] %}
    {% set facts = joinery._upsert_version_facts(stage_sql, partitions, plan, change_info, full_build, changes) %}
    {% set produced = joinery._upsert_written_partition_locations(stage_sql, version_dir, partitions,
        facts.written_partitions, lowercase_names=settings.file_format == 'hive') if partitions else {} %}
    {% do run_query('drop table ' ~ stage_sql) %}
    {% if facts.written != facts.expected_rows %}
        {{ joinery._upsert_fail('the new version of ' ~ target ~ ' in ' ~ version_dir ~ ' has ' ~ facts.written
            ~ ' rows where ' ~ facts.expected_rows ~ ' were expected; the table was not changed', changes) }}
    {% endif %}
    {% do facts.update({'produced': produced}) %}
    {{ return(facts) }}
{% endmacro %}


{% macro _upsert_version_facts(stage_sql, stage_partitions, plan, change_info, full_build, changes) %}
    {#- The written version's row count and partitions, with the table's figures of the plan
        (`target_facts`) in the same statement: the rows the version must hold, the table's
        partitions it replaces (and on a full build the version directories holding them), and the
        run's summary. One statement: the two parts run side by side, one round trip. It names the
        cached changes once: naming them twice in one statement makes Spark compute them again when
        their query uses a CTE twice (compact's, fk_join's). Specs are named as the new version's
        columns (partition columns last), as the table's are. -#}
    {% set written_sql = joinery._upsert_rows_and_partitions_sql('select * from ' ~ stage_sql, stage_partitions) %}
    {% if plan.target_facts %}
        {% set row = run_query('select * from (' ~ written_sql ~ ') as written\ncross join (\n'
            ~ plan.target_facts ~ '\n) as current').rows[0] %}
    {% else %}
        {% set row = run_query(written_sql).rows[0] | list + [none, 0, 0, none, none] %}
    {% endif %}
    {% set existing_partitions = joinery._upsert_specs_of_values(plan.target_partition_columns,
        joinery._upsert_partition_values(row[5], changes)) if row[5] is not none else [] %}
    {% if full_build %}
        {% set expected = change_info.live_rows %}
        {% set summary = 'full build of ' ~ change_info.live_rows ~ ' rows' %}
    {% else %}
        {% set updated = row[3] | int %}
        {% set deleted = row[4] | int %}
        {% set inserted = change_info.live_rows - updated %}
        {% set expected = (row[2] | int) + inserted - deleted %}
        {% set summary = inserted ~ ' inserted, ' ~ updated ~ ' updated, ' ~ deleted ~ ' deleted' %}
    {% endif %}
    {{ return({'written': row[0] | int,
        'written_partitions': joinery._upsert_partition_values(row[1], changes) if stage_partitions else [],
        'expected_rows': expected, 'existing_partitions': existing_partitions,
        'existing_versions': fromjson(row[6]) if row[6] is not none else [], 'summary': summary,
        'figures': none if full_build else {'inserted': inserted, 'updated': updated, 'deleted': deleted}}) }}
{% endmacro %}


{% macro _upsert_rows_and_partitions_sql(sql, partition_columns) %}
    {#- A one-row SELECT of the rows of `sql`: `joinery_rows`, their count, and `joinery_partitions`,
        their distinct partitions (_partition_list_sql; NULL when there are no partition columns).
        One scan, grouped by partition. -#}
    {% if not partition_columns %}
        {#- A plain count: a sum over a one-row count would add an aggregation and its exchange. -#}
        {{ return('select count(*) as joinery_rows, cast(null as string) as joinery_partitions\nfrom (\n'
            ~ sql ~ '\n)') }}
    {% endif %}
    {{ return('select coalesce(sum(n), 0) as joinery_rows, ' ~ joinery._partition_list_sql(partition_columns)
        ~ ' as joinery_partitions\nfrom (\n'
        ~ joinery._partition_rollup_sql(sql, partition_columns, ['count(*) as n']) ~ '\n)') }}
{% endmacro %}


{% macro _upsert_partitions_and_versions_sql(relation_sql, partition_columns) %}
    {#- A one-row SELECT of a joinery table's partitions (`joinery_partitions`, as
        _upsert_rows_and_partitions_sql) and the version directories holding them (`joinery_versions`,
        a JSON array of `v_<run id>` names under the table's root), from one scan that decodes no
        column of the files. A partition's files all lie in its location, so one file path per
        partition names its directory, parsed from that one path. The path's form (a percent-encoded
        URI) does not matter: a version directory's name has no character to encode, and it is the
        last such name before the partition's folders. A partition with no file names no directory
        (joinery writes none). The path's alias has spaces, so no partition column can take it. -#}
    {% set names = joinery._quoted_column_list(partition_columns) %}
    {% set version = "regexp_extract(joinery_file_path, '/(v_[0-9]+_[0-9a-f]+)/([^/]+=[^/]*/)*[^/]+$', 1)" %}
    {{ return('select ' ~ joinery._partition_list_sql(partition_columns) ~ ' as joinery_partitions,\n'
        ~ '    to_json(array_sort(array_remove(array_distinct(collect_list(' ~ version ~ ")), ''))) as joinery_versions\n"
        ~ 'from (\n' ~ joinery._partition_rollup_sql('select ' ~ names ~ ', input_file_name() as `joinery file path` from '
            ~ relation_sql, partition_columns, ['max(`joinery file path`) as joinery_file_path']) ~ '\n)') }}
{% endmacro %}
