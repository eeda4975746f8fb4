{#- Tombstones: with the config `tombstones` (the columns that order a key's versions; compact sets
    it), joinery_upsert remembers each deleted key with the version that deleted it, in the companion
    table upsert_tombstones_relation (`<table>__joinery_tombstones`), so that a macro building the
    changes (compact) can tell a late, older version from a re-insert. The table keeps live rows only.
    The companion is a log: an incremental run appends a record per key it deletes (its versions)
    or clears (NULL versions), and a key's tombstone is its newest record (_upsert_tombstones_sql).
    A full build replaces it. It is written before the table's commit (docs/compaction.md,
    "Tombstones", walks through why). -#}

{% macro _upsert_write_tombstones(target, changes, change_info, settings, full_build, stats=none) %}
    {#- Record this run's changes in the companion: a change flagged deleted records its key's
        tombstone with its values of the tombstone columns; a delete whose tombstone columns are all
        NULL (beaten by every version: no tombstone) clears its key's, and so does a live change of a
        key that holds one. A full build replaces the companion with its deletes; an incremental run
        appends, and sends nothing when its figures (`stats`, pipeline/preflight.sql) count nothing
        to record. -#}
    {% if not settings.tombstones %}
        {{ return(none) }}
    {% endif %}
    {% set versions = joinery._upsert_tombstone_columns(change_info, settings, changes) %}
    {% set companion = joinery.upsert_tombstones_relation(target) %}
    {% set existing = adapter.get_relation(database=companion.database, schema=companion.schema,
        identifier=companion.identifier) %}
    {% if full_build or existing is none %}
        {% do joinery._upsert_replace_tombstones(target, companion, existing, changes, change_info, versions,
            settings) %}
    {% elif stats is none or stats.tombstone_changes > 0 %}
        {#- A run whose MERGE compares versions (the plan's) records its deletes as they are: a record
            older than the table's row holds off nothing that row does not, so no read of the table or
            of the companion is needed. -#}
        {% set exact = not (stats or {}).get('versioned') %}
        {% do run_query('insert into ' ~ companion.render() ~ '\n'
            ~ joinery._upsert_tombstone_records_sql(changes, change_info, versions, companion if exact else none)) %}
    {% endif %}
{% endmacro %}


{% macro _upsert_tombstone_records_sql(changes, change_info, versions, companion=none) %}
    {#- The companion's rows for this run's changes: the key, the tombstone columns (NULL for a
        clear), when it was recorded. With `companion` (an incremental run): every delete, and each
        live change of a key the companion holds; without (a full build): the recording deletes. -#}
    {% set records = joinery._upsert_tombstone_condition(change_info, versions, 'changed') %}
    {% set version_sql = [] %}
    {% for column in versions %}
        {% do version_sql.append('if(' ~ records ~ ', changed.' ~ joinery._quote_identifier(column) ~ ', null) as '
            ~ joinery._quote_identifier(column)) %}
    {% endfor %}
    {% set sql %}
select
    {{ joinery._quoted_column_list(change_info['keys'], 'changed') }},
    {{ version_sql | join(',\n    ') }},
    current_timestamp() as _joinery_recorded_at
from {{ changes }} as changed
{%- if companion is not none %}
where (
    not {{ joinery._upsert_live_condition(change_info, 'changed') }}
    or exists (
        select 1 from {{ companion }} as held
        where {{ joinery._key_match(change_info['keys'], 'held', 'changed') }}
    )
)
{#- A record equal to the key's newest one (a batch read again) is not appended again. #}
and not exists (
    select 1 from {{ joinery._upsert_tombstones_sql(companion, change_info['keys'], versions) }} as newest
    where {{ joinery._key_match(change_info['keys'], 'newest', 'changed') }}
        and {{ joinery._upsert_same_versions_sql(versions, 'newest', 'changed', records) }}
)
{%- else %}
where {{ records }}
{%- endif %}
    {%- endset %}
    {{ return(sql) }}
{% endmacro %}


{% macro _upsert_same_versions_sql(versions, newest, changed, records) %}
    {#- True when the change in `changed` would record just what `newest` holds: a recording delete of
        the same version columns. -#}
    {% set same = [records] %}
    {% for column in versions %}
        {% set quoted = joinery._quote_identifier(column) %}
        {% do same.append(newest ~ '.' ~ quoted ~ ' <=> ' ~ changed ~ '.' ~ quoted) %}
    {% endfor %}
    {{ return(same | join(' and ')) }}
{% endmacro %}


{% macro _upsert_tombstone_condition(change_info, versions, alias) %}
    {#- True for a change that records a tombstone: a delete with some tombstone column set. -#}
    {% if change_info.deleted is none %}
        {{ return('false') }}
    {% endif %}
    {% set known = [] %}
    {% for column in versions %}
        {% do known.append(alias ~ '.' ~ joinery._quote_identifier(column) ~ ' is not null') %}
    {% endfor %}
    {{ return('(not ' ~ joinery._upsert_live_condition(change_info, alias) ~ ' and (' ~ known | join(' or ') ~ '))') }}
{% endmacro %}


{% macro _upsert_replace_tombstones(target, companion, existing, changes, change_info, versions, settings) %}
    {#- A full build's companion: exactly its winning deletes, replacing the companion in one commit
        (`create or replace` on delta and iceberg; a new version directory on parquet, through
        joinery_upsert's own full build). Also how an incremental run starts a companion for a table
        built before tombstones. -#}
    {% set sql = joinery._upsert_tombstone_records_sql(changes, change_info, versions) %}
    {% set file_format = settings.file_format if settings.file_format != 'hive' else 'parquet' %}
    {% if joinery._upsert_commit_path(file_format) == 'merge' %}
        {% do run_query('create or replace table ' ~ companion.render() ~ ' using ' ~ file_format ~ '\nas\n' ~ sql) %}
        {{ return(none) }}
    {% endif %}
    {% set companion_settings = {'unique_key': change_info['keys'], 'deleted_column': settings.deleted_column,
        'partition_by': [], 'on_schema_change': 'ignore', 'tombstones': none, 'rebuild_threshold': none,
        'options': {}, 'file_format': file_format, 'commit': 'directory', 'write_order': [], 'rows_per_file': none, 'file_bytes': none} %}
    {% set mode = {'full': true, 'reason': 'tombstones of a full build' if existing is not none
        else 'first build of the tombstones'} %}
    {% do joinery._upsert_apply(companion, existing, sql, companion_settings, mode) %}
{% endmacro %}
