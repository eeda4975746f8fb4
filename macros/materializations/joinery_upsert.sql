{#- The joinery_upsert materialization: apply the changed rows a model selects (upserts, and deletes
    through a boolean delete-marker column) to a table by `unique_key`. delta/iceberg: one MERGE.
    parquet/orc/Hive SerDe tables: write the new version to a fresh directory and commit it with
    metastore calls only, never touching the live files (docs/upsert.md). -#}

{% materialization joinery_upsert, default %}
    {% set settings = joinery.upsert_settings() %}
    {% set target = this.incorporate(type='table') %}
    {% do joinery.validate_catalog_format(target, settings.file_format) %}
    {% set existing = adapter.get_relation(database=this.database, schema=this.schema, identifier=this.identifier) %}

    {{ run_hooks(pre_hooks, inside_transaction=False) }}
    {{ run_hooks(pre_hooks, inside_transaction=True) }}
    {% do joinery.upsert_assert_contract(sql, settings) %}

    {% if existing is not none and not existing.is_table %}
        {#- A view holds no data: nothing to keep while the table is built. -#}
        {% do adapter.drop_relation(existing) %}
        {% set existing = none %}
    {% endif %}

    {% if settings.file_format in ('delta', 'iceberg') %}
        {% do joinery.upsert_by_merge(target, existing, sql, settings) %}
    {% else %}
        {% do joinery.upsert_by_rewrite(target, existing, sql, settings) %}
    {% endif %}

    {% do joinery.upsert_apply_properties(target, settings) %}
    {% do apply_grants(target, config.get('grants'), should_revoke=should_revoke(existing, full_refresh_mode=true)) %}
    {{ run_hooks(post_hooks, inside_transaction=True) }}
    {% do persist_docs(target, model) %}
    {{ run_hooks(post_hooks, inside_transaction=False) }}
    {{ return({'relations': [target]}) }}
{% endmaterialization %}


{% macro upsert_settings() %}
    {#- The model's joinery_upsert config, validated. -#}
    {% set where = 'joinery_upsert (model ' ~ model.name ~ ')' %}
    {% set unique_key = config.get('unique_key') %}
    {% if unique_key is none or unique_key == [] or unique_key == '' %}
        {{ joinery.raise_argument_error(where, 'unique_key', unique_key,
            'joinery_upsert needs unique_key: the column (or list of columns) that identifies a row') }}
    {% endif %}
    {% set keys = joinery.as_list(unique_key, 'unique_key', where) %}
    {% set deleted_column = config.get('deleted_column', '_joinery_deleted') %}
    {% do joinery.validate_identifier(deleted_column, 'deleted_column', where) %}
    {% set partition_by = config.get('partition_by') %}
    {% set partitions = joinery.as_list(partition_by, 'partition_by', where) if partition_by is not none else [] %}
    {% for name in partitions if not modules.re.match('^[A-Za-z_][A-Za-z0-9_]*$', name | string) %}
        {#- Spark writes such a table, but the Hive metastore cannot parse a partition filter on it
            (`Error parsing partition filter`), which every incremental run needs. -#}
        {{ joinery.raise_argument_error(where, 'partition_by', name, 'a partition column of a joinery_upsert '
            ~ 'table must be named by an identifier (letters, digits and underscores, not starting with a digit): '
            ~ 'the Hive metastore cannot filter partitions on other names; rename it in the SELECT') }}
    {% endfor %}
    {% set file_format = (config.get('file_format') or 'parquet') | lower %}
    {% set allowed_formats = ['parquet', 'orc', 'hive', 'delta', 'iceberg'] %}
    {% if file_format not in allowed_formats %}
        {{ joinery.raise_argument_error(where, 'file_format', file_format, 'expected one of '
            ~ tojson(allowed_formats)) }}
    {% endif %}
    {% set options = config.get('options') or {} %}
    {% if options is not mapping %}
        {{ joinery.raise_argument_error(where, 'options', options, "expected a mapping, e.g. {'fileFormat': 'avro'}") }}
    {% endif %}
    {% if file_format == 'hive' and not options %}
        {#- Without a fileFormat, Spark writes Hive text files, which cannot hold nested types or NULLs
            distinct from empty strings faithfully. -#}
        {{ joinery.raise_argument_error(where, 'options', options,
            "file_format 'hive' needs options={'fileFormat': ...}, e.g. {'fileFormat': 'avro'}") }}
    {% endif %}
    {#- dbt-spark table configs joinery_upsert does not apply: an error, not a table without them. -#}
    {% for name in ['clustered_by', 'buckets'] if config.get(name) is not none %}
        {{ joinery.raise_argument_error(where, name, config.get(name), 'joinery_upsert does not write bucketed '
            ~ "tables (each run writes new files for the touched partitions only); leave it unset, or use "
            ~ "materialized='table'") }}
    {% endfor %}
    {#- dbt's default `ignore` is taken as joinery's own behaviour (new columns are added, removed ones
        kept): the two cannot be told apart, as dbt fills in the default. -#}
    {% set on_schema_change = config.get('on_schema_change') or 'ignore' %}
    {% if on_schema_change not in ['ignore', 'append_new_columns', 'fail'] %}
        {{ joinery.raise_argument_error(where, 'on_schema_change', on_schema_change,
            "expected 'append_new_columns' (joinery_upsert's behaviour, also under dbt's default 'ignore') or "
            ~ "'fail'; columns cannot be dropped in place from a parquet table: use --full-refresh") }}
    {% endif %}
    {{ return({'where': where, 'unique_key': keys, 'deleted_column': deleted_column, 'partition_by': partitions,
        'file_format': file_format, 'options': options, 'on_schema_change': on_schema_change}) }}
{% endmacro %}


{% macro upsert_check_schema_unchanged(settings, changes, target_sql, target_names, change_names) %}
    {#- on_schema_change='fail': an incremental run whose SELECT adds or drops columns of the table
        stops before it writes anything (its cached changes dropped). Names compare ignoring case,
        as Spark resolves them. -#}
    {% if settings.on_schema_change != 'fail' %}
        {{ return(none) }}
    {% endif %}
    {% set added = [] %}
    {% for name in change_names if joinery.find_column(target_names, name) is none %}
        {% do added.append(name) %}
    {% endfor %}
    {% set removed = [] %}
    {% for name in target_names if joinery.find_column(change_names, name) is none %}
        {% do removed.append(name) %}
    {% endfor %}
    {% if added or removed %}
        {% do joinery.upsert_drop_changes(changes) %}
        {{ joinery.raise_argument_error(settings.where, 'on_schema_change', 'fail', 'the model adds columns '
            ~ tojson(added) ~ ' and no longer selects ' ~ tojson(removed) ~ ' of ' ~ target_sql
            ~ '; run it with --full-refresh, or set on_schema_change to append_new_columns') }}
    {% endif %}
{% endmacro %}


{% macro upsert_assert_contract(sql, settings) %}
    {#- An enforced model contract, checked as dbt's `table` checks it (names and types of the SELECT
        against the model's yml columns), before anything is written. The delete marker column is
        not part of the table, so it is not part of the contract. -#}
    {% set contract = config.get('contract') %}
    {% if not (contract and contract.enforced) %}
        {{ return(none) }}
    {% endif %}
    {% set names = [] %}
    {% for column in get_column_schema_from_query(sql) if column.name | lower != settings.deleted_column | lower %}
        {% do names.append(joinery.quote_identifier(column.name)) %}
    {% endfor %}
    {% do get_assert_columns_equivalent('select ' ~ names | join(', ') ~ ' from (\n' ~ sql ~ '\n)') %}
{% endmacro %}


{% macro upsert_apply_properties(target, settings) %}
    {#- The model's `tblproperties`, and its description as the table comment under
        persist_docs.relation, set on the table after each run (one statement, only when configured):
        joinery writes its own DDL, and a rebuilt definition starts without them. -#}
    {% set where = settings.where %}
    {% set properties = config.get('tblproperties') or {} %}
    {% if properties is not mapping %}
        {{ joinery.raise_argument_error(where, 'tblproperties', properties,
            "expected a mapping, e.g. {'owner': 'data'}") }}
    {% endif %}
    {% set assignments = [] %}
    {% for name, value in properties.items() %}
        {% if (name | string | lower).startswith('joinery.') %}
            {{ joinery.raise_argument_error(where, 'tblproperties', name,
                "names starting with 'joinery.' are joinery's own") }}
        {% endif %}
        {% do assignments.append(joinery.sql_string(name) ~ ' = ' ~ joinery.sql_string(value)) %}
    {% endfor %}
    {% if (config.get('persist_docs') or {}).get('relation') and model.description %}
        {% do assignments.append("'comment' = " ~ joinery.sql_string(model.description)) %}
    {% endif %}
    {% if assignments %}
        {% do run_query('alter table ' ~ target ~ ' set tblproperties (' ~ assignments | join(', ') ~ ')') %}
    {% endif %}
{% endmacro %}


{% macro upsert_stage_changes(sql) %}
    {#- The model's changed rows, computed once and cached for this run: validation, statistics and
        the write all read them, and the model's SELECT (which may read {{ this }}) is evaluated
        before anything changes. `cache table ... as` creates the temp view and caches it in one
        statement (a `create or replace temporary view` before it was a statement of its own, 0.45 s
        median under the test suite's load). It cannot replace a view, so the name is this
        invocation's own: a run that failed before dropping its view leaves it in a long-lived
        session (the embedded `local` target) without blocking the next run. Temp views have no
        schema, and models of one name in two schemas can run side by side in one session (dbt
        threads on the embedded target), so the suffix is of this invocation and this relation. -#}
    {% set changes = this.identifier ~ '__joinery_changes_' ~ local_md5(invocation_id ~ this.render())[:8] %}
    {% do run_query('cache table ' ~ changes ~ ' as\n' ~ sql) %}
    {{ return(changes) }}
{% endmacro %}


{% macro upsert_drop_changes(changes) %}
    {#- Drop the run's cached changes (`drop view` uncaches a temp view as it drops it): at the end
        of a run, and before each error joinery raises once they are cached, so that a failed run
        does not leave them cached in a long-lived session (the embedded target's, a Thrift
        server's). An error Spark raises cannot be caught in Jinja; that run's cache is left to
        Spark. -#}
    {% do run_query('drop view if exists ' ~ changes) %}
{% endmacro %}


{% macro upsert_validate_changes(changes, settings, with_partitions=false, newest_of=none) %}
    {#- Check the changed rows' columns against the config; returns their columns (minus the delete
        marker), the key, partition and delete-marker columns as spelled in the SELECT, and their
        statistics (rows, live rows, duplicate keys). With `with_partitions` (an incremental rewrite of
        a partitioned table), also the partitions they fall in (`partition_values`); with
        `newest_of` (upsert_watermark_to_derive), the newest value of its column, at least its
        floor, as a string (`newest`); both from the same pass over them. -#}
    {% set where = settings.where %}
    {% set columns = joinery.upsert_describe(changes)['columns'] %}
    {% set names = columns | map(attribute='name') | list %}
    {% set keys = [] %}
    {% for key in settings.unique_key %}
        {% set found = joinery.find_column(names, key) %}
        {% if found is none %}
            {% do joinery.upsert_drop_changes(changes) %}
            {{ joinery.raise_argument_error(where, 'unique_key', key,
                "no such column in the model's SELECT; its columns are " ~ tojson(names)) }}
        {% endif %}
        {% set key_type = (columns | selectattr('name', 'equalto', found) | first)['type'] %}
        {% if not joinery.is_comparable_type(key_type) %}
            {% do joinery.upsert_drop_changes(changes) %}
            {{ joinery.raise_argument_error(where, 'unique_key', key, 'the column is of type ' ~ key_type
                ~ ', which Spark cannot compare (a map or a variant): a key must be comparable; key on '
                ~ 'columns that identify the row, or on a string form such as to_json(...) in the SELECT') }}
        {% endif %}
        {% do keys.append(found) %}
    {% endfor %}
    {% set partitions = [] %}
    {% for column in settings.partition_by %}
        {% set found = joinery.find_column(names, column) %}
        {% if found is none %}
            {% do joinery.upsert_drop_changes(changes) %}
            {{ joinery.raise_argument_error(where, 'partition_by', column,
                "no such column in the model's SELECT; its columns are " ~ tojson(names)) }}
        {% endif %}
        {% do partitions.append(found) %}
    {% endfor %}
    {% set deleted = joinery.find_column(names, settings.deleted_column) %}
    {% if deleted is not none %}
        {% set deleted_type = (columns | selectattr('name', 'equalto', deleted) | first)['type'] %}
        {% if deleted_type | lower != 'boolean' %}
            {% do joinery.upsert_drop_changes(changes) %}
            {{ joinery.raise_argument_error(where, 'deleted_column', deleted,
                'the delete marker must be a boolean column, but it is ' ~ deleted_type) }}
        {% endif %}
    {% endif %}
    {% set stored = columns | rejectattr('name', 'equalto', deleted) | list %}
    {#- Partition columns last: Spark stores them after the data columns. -#}
    {% set data_columns = [] %}
    {% set partition_columns = [] %}
    {% for column in stored if column.name not in partitions %}
        {% do data_columns.append(column) %}
    {% endfor %}
    {% for name in partitions %}
        {% do partition_columns.append(stored | selectattr('name', 'equalto', name) | first) %}
    {% endfor %}
    {% set live = 'not coalesce(' ~ joinery.quote_identifier(deleted) ~ ', false)' if deleted else 'true' %}
    {% set key_list = joinery.quoted_column_list(keys) %}
    {% set key_struct = [] %}
    {% for key in keys %}
        {% do key_struct.append(joinery.sql_string(key) ~ ', ' ~ joinery.quote_identifier(key)) %}
    {% endfor %}
    {#- Partitions: a set per key, then the set of those (small: one element per distinct set). A
        statement of its own for them cost a second pass over the changes, about 0.3 s. -#}
    {% set casts = joinery.upsert_partition_casts(partitions) if with_partitions and partitions else [] %}
    {#- The newest value of a watermark column (a column the SELECT lacks yields none). Every changed
        row was read by this run, so that value never passes a row the run did not read. -#}
    {% set newest = joinery.find_column(names, newest_of.column) if newest_of is not none else none %}
    {% set newest_sql = 'null' %}
    {% if newest is not none %}
        {% set newest_type = (columns | selectattr('name', 'equalto', newest) | first)['type'] %}
        {% set newest_sql = joinery.watermark_text_sql('greatest(' ~ joinery.typed_literal(newest_of.floor, newest_type)
            ~ ', max(newest))' if newest_of.floor is not none else 'max(newest)', newest_type) %}
    {% endif %}
    {% set stats = run_query(
        'select count(*), coalesce(sum(n), 0), coalesce(sum(live), 0), coalesce(max(n), 0), max_by(key_json, n), '
            ~ ('to_json(array_sort(array_distinct(flatten(collect_set(partitions)))))' if casts else 'null') ~ ', '
            ~ newest_sql ~ '\n'
        ~ 'from (select count(*) as n, count_if(' ~ live ~ ') as live, to_json(named_struct('
            ~ key_struct | join(', ') ~ ')) as key_json'
            ~ (', collect_set(array(' ~ casts | join(', ') ~ ')) as partitions' if casts else '')
            ~ (', max(' ~ joinery.quote_identifier(newest) ~ ') as newest' if newest is not none else '') ~ '\n'
        ~ '      from ' ~ changes ~ ' group by ' ~ key_list ~ ')').rows[0] %}
    {% if stats[3] > 1 %}
        {% do joinery.upsert_drop_changes(changes) %}
        {{ exceptions.raise_compiler_error(where ~ ': the changed rows hold ' ~ stats[3]
            ~ ' rows for the key ' ~ stats[4]
            ~ ' (unique_key ' ~ tojson(keys)
                ~ '); an upsert batch needs one row per key: deduplicate it in the model'
                ~ ' (e.g. joinery.dedup_latest)') }}
    {% endif %}
    {{ return({'columns': data_columns + partition_columns, 'keys': keys, 'partition_by': partitions,
        'deleted': deleted, 'live': live, 'rows': stats[1] | int, 'live_rows': stats[2] | int,
        'partition_values': joinery.upsert_parse_partition_values(stats[5], partitions) if casts else none,
        'newest': stats[6]}) }}
{% endmacro %}
