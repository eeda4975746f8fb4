{#- The contract between the macros that feed joinery_upsert (compact, fk_join, changelog_state,
    fk_join_changes) and the model's config: one delete marker name and one key, both read from the
    config, so a macro and the materialization cannot disagree on them. -#}

{% macro upsert_marker_column() %}
    {{ return(adapter.dispatch('upsert_marker_column', 'joinery')()) }}
{% endmacro %}


{% macro default__upsert_marker_column() %}
    {#- The name joinery_upsert reads the delete marker from: the model's deleted_column. The config
        is not known at parse time (config.get answers ''). -#}
    {% if not execute %}
        {{ return('_joinery_deleted') }}
    {% endif %}
    {% set name = config.get('deleted_column', '_joinery_deleted') %}
    {% do joinery._validate_identifier(name, 'deleted_column', 'upsert_marker_column (model ' ~ model.name ~ ')') %}
    {{ return(name) }}
{% endmacro %}


{% macro _upsert_partial_column() %}
    {#- The column that marks a partial row: one that updates only some columns of the row it
        matches (the run plan's `partial.columns`) and never inserts one. A change-feed fk_join
        updates the right side's columns so, without reading the left side's (fk_join_change_feed.sql). -#}
    {{ return('_joinery_partial') }}
{% endmacro %}


{% macro upsert_check_marker_clash(columns, where) %}
    {{ return(adapter.dispatch('upsert_check_marker_clash', 'joinery')(columns, where)) }}
{% endmacro %}


{% macro default__upsert_check_marker_clash(columns, where) %}
    {#- In a joinery_upsert model, a data column named like deleted_column would be read as the delete
        marker and never stored: an error instead. Other materializations read no marker. -#}
    {% if config.get('materialized') != 'joinery_upsert' %}
        {{ return(none) }}
    {% endif %}
    {% set marker = joinery.upsert_marker_column() %}
    {% set clash = joinery._find_column(columns, marker) %}
    {% if clash is not none %}
        {{ exceptions.raise_compiler_error('joinery.' ~ where ~ ': the model\'s deleted_column `' ~ marker
            ~ '` is also a column of its inputs (' ~ clash ~ '), so joinery_upsert would read it as the delete '
            ~ 'marker and never store it: set deleted_column (model ' ~ model.name ~ ') to a name that is not a '
            ~ 'column, or leave it unset (default _joinery_deleted)') }}
    {% endif %}
{% endmacro %}


{% macro upsert_key_argument(key, where, argument='key', implied=[]) %}
    {{ return(adapter.dispatch('upsert_key_argument', 'joinery')(key, where, argument, implied)) }}
{% endmacro %}


{% macro default__upsert_key_argument(key, where, argument='key', implied=[]) %}
    {#- A macro's key argument (named `argument`) as a list of names: the model's unique_key when
        omitted, an error when both are given and differ (ignoring case and order). `implied`: columns
        the macro adds to the key itself (compact's partition_by), which count as part of it. -#}
    {% if not execute %}
        {#- The config is not known at parse time (config.get answers ''): a placeholder key. -#}
        {{ return(joinery._as_list(key, argument, where) if key is not none else ['joinery_unresolved']) }}
    {% endif %}
    {% set unique_key = config.get('unique_key') %}
    {% set configured = joinery._as_list(unique_key, 'unique_key', where)
        if unique_key is not none and unique_key not in ['', []] else none %}
    {% if key is none and configured is none %}
        {{ joinery._raise_argument_error(where, argument, none, 'expected the key column(s): pass `' ~ argument
            ~ "`, or set the model's unique_key config, which it defaults to") }}
    {% endif %}
    {% set names = joinery._as_list(key if key is not none else configured, argument, where) %}
    {% for name in names if name is not string or name | trim == '' %}
        {{ joinery._raise_argument_error(where, argument, key, 'expected column names (strings)') }}
    {% endfor %}
    {% if key is not none and configured is not none %}
        {% set identity = (names + implied) | map('lower') | unique | sort | list %}
        {% if identity != configured | map('lower') | unique | sort | list %}
            {{ joinery._raise_argument_error(where, argument, key, "differs from the model's unique_key "
                ~ tojson(configured) ~ (' (with partition_by ' ~ tojson(implied) ~ ' added to it)' if implied else '')
                ~ ': both name the row identity, so make them the same columns, or drop `' ~ argument
                ~ '` to use unique_key') }}
        {% endif %}
    {% endif %}
    {{ return(names) }}
{% endmacro %}


{% macro upsert_tombstones_relation(relation) %}
    {{ return(adapter.dispatch('upsert_tombstones_relation', 'joinery')(relation)) }}
{% endmacro %}


{% macro default__upsert_tombstones_relation(relation) %}
    {#- Where joinery_upsert keeps a model's tombstones (config `tombstones`): the companion table
        `<table>__joinery_tombstones`, beside the table, so the table itself holds live rows only. -#}
    {{ return(relation.incorporate(path={'identifier': relation.identifier ~ '__joinery_tombstones'}, type='table')) }}
{% endmacro %}


{% macro _upsert_tombstones_companion(target, settings) %}
    {#- The model's tombstones table as SQL, when it keeps tombstones (settings.tombstones) and the
        table exists in dbt's relation cache; else none. -#}
    {% if not settings.tombstones %}
        {{ return(none) }}
    {% endif %}
    {% set companion = joinery.upsert_tombstones_relation(target) %}
    {% set found = adapter.get_relation(database=companion.database, schema=companion.schema,
        identifier=companion.identifier) %}
    {{ return(companion.render() if found is not none else none) }}
{% endmacro %}


{% macro _upsert_tombstones_sql(companion, keys, versions) %}
    {#- The tombstones a companion (upsert_tombstones_relation) holds, as a subquery of the key and
        tombstone columns: each key's newest record, unless it is a clear (NULL tombstone columns).
        How a capability (compact) reads the tombstones joinery_upsert keeps for its model. -#}
    {% set known = [] %}
    {% for column in versions %}
        {% do known.append(joinery._quote_identifier(column) ~ ' is not null') %}
    {% endfor %}
    {% set sql %}
(
    select {{ joinery._quoted_column_list(keys + versions) }}
    from (
        select *, row_number() over (partition by {{ joinery._quoted_column_list(keys) }}
            order by _joinery_recorded_at desc) as joinery_newest
        from {{ companion }}
    ) as records
    where joinery_newest = 1 and ({{ known | join(' or ') }})
)
    {%- endset %}
    {{ return(sql) }}
{% endmacro %}


{% macro _upsert_commit_path(file_format) %}
    {#- The commit path of a table format, the one place that maps them: 'merge' for delta and iceberg,
        whose own log commits (merge_commit/: one `create or replace` or one MERGE), 'directory' for
        parquet, orc and Hive SerDe tables (directory_commit/: a new version directory committed by
        metastore calls). -#}
    {{ return('merge' if file_format in ('delta', 'iceberg') else 'directory') }}
{% endmacro %}
