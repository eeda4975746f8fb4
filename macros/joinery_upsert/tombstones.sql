{#- Tombstones: with the config `tombstones` (the columns that order a key's versions; compact sets
    it), joinery_upsert remembers each deleted key with the version that deleted it, in the companion
    table upsert_tombstones_relation (`<table>__joinery_tombstones`), so that a macro building the
    changes (compact) can tell a late, older version from a re-insert. The table keeps live rows only.
    The companion is itself written by joinery_upsert's own paths (rewrite.sql, merge.sql), keyed
    like the table and unpartitioned, so a kill leaves it at its old or its new version; it is
    written before the table's commit (docs/compaction.md, "Tombstones", walks through why). -#}

{% macro _upsert_write_tombstones(target, changes, change_info, settings, full_build) %}
    {#- Apply this run's changes to the companion: a change flagged deleted records its key's
        tombstone, with its values of the tombstone columns; a live change clears its key's
        tombstone, and so does a delete whose tombstone columns are all NULL (that version is beaten
        by every other, so it is no tombstone). A full build replaces the companion. -#}
    {% if not settings.tombstones %}
        {{ return(none) }}
    {% endif %}
    {% set versions = joinery._upsert_tombstone_columns(change_info, settings, changes) %}
    {% set companion = joinery.upsert_tombstones_relation(target) %}
    {% set existing = adapter.get_relation(database=companion.database, schema=companion.schema,
        identifier=companion.identifier) %}
    {% set marker = settings.deleted_column %}
    {% set known = [] %}
    {% for column in versions %}
        {% do known.append('changed.' ~ joinery._quote_identifier(column) ~ ' is not null') %}
    {% endfor %}
    {% set records = 'not ' ~ joinery._upsert_live_condition(change_info, 'changed') ~ ' and ('
        ~ known | join(' or ') ~ ')' if change_info.deleted is not none else 'false' %}
    {#- An incremental run touches only the keys it records, and those holding a tombstone now: a
        run whose changes touch no tombstone leaves the companion as it is. -#}
    {% set incremental = existing is not none and not full_build %}
    {% set sql %}
select
    {{ joinery._quoted_column_list(change_info['keys'] + versions, 'changed') }},
    current_timestamp() as _joinery_recorded_at,
    not ({{ records }}) as {{ joinery._quote_identifier(marker) }}
from {{ changes }} as changed
{%- if incremental %}
left join (
    select {{ joinery._quoted_column_list(change_info['keys']) }}, true as _joinery_held
    from {{ companion }}
) as held
    on {{ joinery._key_match(change_info['keys'], 'changed', 'held') }}
where {{ records }} or held._joinery_held
{%- else %}
where {{ records }}
{%- endif %}
    {%- endset %}
    {% set companion_settings = {'unique_key': change_info['keys'], 'deleted_column': marker, 'partition_by': [],
        'on_schema_change': 'ignore', 'tombstones': none, 'rebuild_threshold': none, 'options': {},
        'file_format': settings.file_format if settings.file_format != 'hive' else 'parquet'} %}
    {#- The companion is rebuilt whenever its table is. -#}
    {% set mode = {'full': not incremental, 'reason': 'tombstones of a full build' if existing is not none
        else 'first build of the tombstones'} %}
    {% do joinery._upsert_apply(companion, existing, sql, companion_settings, mode) %}
{% endmacro %}
