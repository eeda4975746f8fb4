{#- compact: the Gobblin compaction (seed document 004) as one SELECT. This file holds the public
    macro, its argument checks, and the choice between a full build (full.sql) and an incremental run
    of a joinery_upsert model (incremental.sql); the column plan is in plan.sql, the conditions every
    query shares in conditions.sql, the deltas' CTEs in deltas.sql, the comparison of a full
    compaction with the table in diff.sql, and tombstones in tombstones.sql.

    Version order for a key, greatest wins: `updated_at` (NULL lowest), then `loaded_at` (arrival,
    NULL lowest), then source position (snapshot < delta 1 < ... < delta k), then the row's other
    columns (only exact duplicates are left, so any order gives the same result). -#}

{% macro compact(snapshot, deltas, key=none, updated_at=none, deleted=none, defaults={}, removed='keep',
        loaded_at=none, broadcast=true, incremental=none, tombstone_retention=none) %}
    {{ return(adapter.dispatch('compact', 'joinery')(snapshot, deltas, key, updated_at, deleted, defaults,
        removed, loaded_at, broadcast, incremental, tombstone_retention)) }}
{% endmacro %}


{% macro default__compact(snapshot, deltas, key=none, updated_at=none, deleted=none, defaults={}, removed='keep',
        loaded_at=none, broadcast=true, incremental=none, tombstone_retention=none) %}
    {% set snapshot_list = joinery._relation_list(snapshot, 'snapshot', 'compact') %}
    {% if snapshot_list | length != 1 %}
        {{ joinery._raise_argument_error('compact', 'snapshot', snapshot_list | map('string') | list,
            'expected one relation (ref(), source() or this)') }}
    {% endif %}
    {% set snapshot = snapshot_list[0] %}
    {% set deltas = joinery._relation_list(deltas, 'deltas', 'compact', allow_empty=true) %}
    {% set partition_by = config.get('partition_by') %}
    {% set partition_names = joinery._as_list(partition_by, 'partition_by', 'compact') if partition_by else [] %}
    {#- The partition columns are part of the identity: key defaults to unique_key and must match it. -#}
    {% set key_names = joinery.upsert_key_argument(key, 'compact', 'key', partition_names) %}
    {% do joinery._compaction_check_arguments(updated_at, loaded_at, deleted, broadcast, tombstone_retention) %}
    {% if not execute and loaded_at is not none %}
        {#- At parse time, where config() records: joinery_upsert keeps the tombstones of a model that
            reads deltas above a watermark, ordered by these columns (a `table` model ignores it). -#}
        {% do config.set('tombstones', [updated_at, loaded_at] | reject('none') | list) %}
    {% endif %}
    {% set identity_names = joinery._compaction_identity_names(key_names, partition_names) %}
    {% if incremental is none %}
        {#- Only a joinery_upsert model has a previous compacted table to build on. What dbt knows
            decides here; the cost rule once the probe knows whether there are changes
            (_compaction_incremental_sql). -#}
        {% set incremental = config.get('materialized') == 'joinery_upsert'
            and not joinery._upsert_structural_build_mode().full %}
    {% endif %}

    {#- A joinery_upsert model reads only delta rows above its watermark, so a delta row with a NULL
        loaded_at would be in a full build and never in an incremental run: every run of one stops
        on such a row instead. -#}
    {% set settings = {'key': identity_names, 'updated_at': updated_at, 'loaded_at': loaded_at,
        'deleted': joinery._sql_expression(deleted), 'broadcast': broadcast,
        'marker': joinery.upsert_marker_column(),
        'require_loaded_at': loaded_at is not none
            and (incremental or config.get('materialized') == 'joinery_upsert'),
        'tombstones': loaded_at is not none and config.get('materialized') == 'joinery_upsert',
        'tombstone_retention': tombstone_retention} %}
    {% if not incremental %}
        {{ return(joinery._compaction_full_build_sql(snapshot, deltas, identity_names, settings, defaults, removed)) }}
    {% endif %}
    {% do settings.update({'equal_columns': partition_names}) %}
    {{ return(joinery._compaction_incremental_sql(snapshot, deltas, this, identity_names, settings,
        defaults, removed)) }}
{% endmacro %}


{% macro _compaction_check_arguments(updated_at, loaded_at, deleted, broadcast, tombstone_retention) %}
    {#- compact's arguments that name no relation nor column of one, checked before any is read:
        updated_at and loaded_at are identifiers, deleted an expression, broadcast a boolean, and
        tombstone_retention fits (_compaction_check_retention). -#}
    {% for argument, value in [('updated_at', updated_at), ('loaded_at', loaded_at)] if value is not none %}
        {% do joinery._validate_identifier(value, argument, 'compact') %}
    {% endfor %}
    {% if deleted is not none and (deleted is not string or deleted | trim == '') %}
        {{ joinery._raise_argument_error('compact', 'deleted', deleted,
            'expected a boolean SQL expression over the columns, e.g. "op = \'D\'" or "is_deleted"') }}
    {% endif %}
    {% if broadcast not in [true, false] %}
        {{ joinery._raise_argument_error('compact', 'broadcast', broadcast, 'expected true or false') }}
    {% endif %}
    {% do joinery._compaction_check_retention(tombstone_retention, loaded_at) %}
{% endmacro %}


{% macro _compaction_identity_names(key_names, partition_names) %}
    {#- The row identity: the key columns, then each partition column that is not one of them
        (compared ignoring case, as Spark resolves columns). -#}
    {% set identity_names = key_names | list %}
    {% for name in partition_names if name | lower not in key_names | map('lower') | list %}
        {% do identity_names.append(name) %}
    {% endfor %}
    {{ return(identity_names) }}
{% endmacro %}


{% macro _compaction_check_retention(retention, loaded_at) %}
    {#- tombstone_retention: none (keep every tombstone), a number (a numeric loaded_at) or an
        interval of whole units ('30 days'; a timestamp or date loaded_at). Tombstones exist only in
        a model that reads deltas above a watermark, so it needs loaded_at. -#}
    {% if retention is none %}
        {{ return(none) }}
    {% endif %}
    {% set allowed = "expected a number (a numeric loaded_at) or an interval of whole units such as '30 days' "
        ~ "or '12 hours' (second, minute, hour, day or week; a timestamp or date loaded_at), or none to keep every "
        ~ 'tombstone' %}
    {% if retention is string %}
        {% if not modules.re.match('^\\s*[0-9]+\\s*(second|minute|hour|day|week)s?\\s*$', retention, modules.re.I) %}
            {{ joinery._raise_argument_error('compact', 'tombstone_retention', retention, allowed) }}
        {% endif %}
    {% elif retention is boolean or retention is not number or retention < 0 %}
        {{ joinery._raise_argument_error('compact', 'tombstone_retention', retention, allowed) }}
    {% endif %}
    {% if loaded_at is none %}
        {{ joinery._raise_argument_error('compact', 'tombstone_retention', retention, 'needs loaded_at: tombstones '
            ~ 'are kept by a joinery_upsert model that reads deltas above a loaded_at watermark') }}
    {% endif %}
{% endmacro %}
