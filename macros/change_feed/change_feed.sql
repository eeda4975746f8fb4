{#- change_feed: the changes a Delta table's change data feed recorded between two versions, as a
    changelog (the table's columns, then the feed's `_change_type`, `_commit_version`,
    `_commit_timestamp`), and the version range a run reads, checked against the table's history so
    that a feed that cannot give every change stops the run instead of giving a wrong result. -#}

{% macro change_feed(relation, from_version, to_version) %}
    {{ return(adapter.dispatch('change_feed', 'joinery')(relation, from_version, to_version)) }}
{% endmacro %}


{% macro default__change_feed(relation, from_version, to_version) %}
    {#- A subquery of the feed's rows from `from_version` through `to_version` (both included).
        Update pre-images are left out: every key they hold is in the post-image or, for a key
        change, is the key that changed, which a caller reading keys takes from
        joinery._change_feed_keys_sql instead. An empty range (from > to) is an empty subquery. -#}
    {% for name, value in [('from_version', from_version), ('to_version', to_version)] %}
        {% if value is not number or value is boolean or value < 0 %}
            {{ joinery._raise_argument_error('change_feed', name, value, 'expected a table version: an integer >= 0') }}
        {% endif %}
    {% endfor %}
    {% if relation is none or relation is string %}
        {{ joinery._raise_argument_error('change_feed', 'relation', relation | string,
            'expected a Delta table with delta.enableChangeDataFeed: ref() or source()') }}
    {% endif %}
    {% if from_version > to_version %}
        {{ return('(select *, cast(null as string) as _change_type, cast(null as bigint) as _commit_version, '
            ~ 'cast(null as timestamp) as _commit_timestamp, 0 as _change_order from ' ~ relation ~ ' where false)') }}
    {% endif %}
    {{ return("(select *, if(_change_type = 'delete', 0, 1) as _change_order from table_changes("
        ~ joinery._sql_string(relation.render()) ~ ', ' ~ from_version ~ ', ' ~ to_version
        ~ ") where _change_type != 'update_preimage')") }}
{% endmacro %}


{% macro _change_feed_pinned(relations, macro_name) %}
    {#- {'ranges': {relation name: {from, to}}, 'versions': {note field: version}, 'changed': whether
        any feed holds a change, 'mode': the run's build mode (contract/build_mode.sql)}: each
        feed's range, pinned while the model compiles, from the version the table's last commit
        recorded through the current one, so a commit landing later is read by the next run. On a
        full build the ranges are empty and only the current versions are read. -#}
    {% set structural = joinery._upsert_structural_build_mode() %}
    {#- The table's earlier runs, read once for the consumed versions and the cost rule. -#}
    {% set previous = joinery._upsert_previous_state() %}
    {% set built = previous.built or {} %}
    {% set ranges = {} %}
    {% set versions = {} %}
    {% for relation in relations %}
        {% set consumed = built.get(joinery._change_feed_digest(relation)) %}
        {% if not structural.full and consumed is none %}
            {{ exceptions.raise_compiler_error('joinery.' ~ macro_name ~ ': ' ~ this ~ ' records no version of '
                ~ relation ~ ' read by its last run (it was built without change_feed=true, or by another model): '
                ~ 'rebuild it with --full-refresh') }}
        {% endif %}
        {% set range = joinery._change_feed_range(relation, consumed) %}
        {% do ranges.update({relation.render(): range}) %}
        {% do versions.update({joinery._change_feed_digest(relation): range.to}) %}
    {% endfor %}
    {% set changed = namespace(value=false) %}
    {% for range in ranges.values() if range.from <= range.to %}
        {% set changed.value = true %}
    {% endfor %}
    {{ return({'ranges': ranges, 'versions': versions, 'changed': changed.value,
        'mode': joinery._upsert_build_mode(previous, has_changes=changed.value)}) }}
{% endmacro %}


{% macro _change_feed_check_model(argument, relation, names, macro_name) %}
    {#- A change-feed model writes a joinery_upsert table in Delta (its commit records the versions
        read), and reads the table itself, not a changelog_state model. -#}
    {% if config.get('materialized') != 'joinery_upsert' or (config.get('file_format') or '') | lower != 'delta' %}
        {{ joinery._raise_argument_error(macro_name, 'change_feed', true, "a change-feed model needs materialized="
            ~ "'joinery_upsert' and file_format='delta' (its commit records the versions of the feeds it read); "
            ~ 'this model has materialized=' ~ config.get('materialized') ~ ', file_format='
            ~ (config.get('file_format') or 'parquet')) }}
    {% endif %}
    {% if joinery._find_column(names, '_joinery_tombstone') is not none %}
        {{ joinery._raise_argument_error(macro_name, argument, relation | string, 'with change_feed=true, pass the '
            ~ 'Delta table itself, not a changelog_state model') }}
    {% endif %}
{% endmacro %}


{% macro _change_feed_keys_sql(relation, keys, range) %}
    {#- The distinct `keys` of every row the feed recorded in `range` ({from, to}), pre-images
        included (a changed key appears as its old value there): a SELECT, or none for an empty
        range. -#}
    {% if range.from > range.to %}
        {{ return(none) }}
    {% endif %}
    {{ return('select distinct ' ~ joinery._quoted_column_list(keys) ~ ' from table_changes('
        ~ joinery._sql_string(relation.render()) ~ ', ' ~ range.from ~ ', ' ~ range.to ~ ')') }}
{% endmacro %}


{% macro _change_feed_digest(relation) %}
    {#- The short name a source's consumed version goes under in a joinery_upsert note. -#}
    {{ return('feed_' ~ local_md5(relation.render() | lower)[:12]) }}
{% endmacro %}


{% macro _change_feed_range(relation, consumed) %}
    {#- The versions a run reads from `relation`: {'from': consumed + 1, 'to': the current version},
        pinned once, so a commit landing during the run is read by the next one. `consumed`: the
        version the model's last commit read through, or none on a full build (then the range is
        empty and only the current version is read). One `describe history`, a second only when
        more than HISTORY commits landed since. -#}
    {% set history = 100 %}
    {% if consumed is none %}
        {% do joinery._change_feed_require_enabled(relation) %}
    {% endif %}
    {% set rows = run_query('describe history ' ~ relation.render() ~ ' limit ' ~ (1 if consumed is none
        else history)).rows %}
    {% set current = rows[0]['version'] | int %}
    {% if consumed is none %}
        {{ return({'from': current + 1, 'to': current}) }}
    {% endif %}
    {% set consumed = consumed | int %}
    {% if rows | length == history and rows[-1]['version'] | int > consumed + 1 %}
        {% set rows = run_query('describe history ' ~ relation.render()).rows %}
    {% endif %}
    {% do joinery._change_feed_check_history(relation, rows, consumed, current) %}
    {{ return({'from': consumed + 1, 'to': current}) }}
{% endmacro %}


{% macro _change_feed_require_enabled(relation) %}
    {#- A full build reads the tables, not their feeds, but the next run reads the feeds: a source
        without one is an error now rather than then. One `show tblproperties`, before `describe
        history`, which fails on a table that is not Delta with a message about history. -#}
    {% set enabled = joinery._table_properties(relation.render()).get('delta.enableChangeDataFeed', '') | lower %}
    {% if enabled != 'true' %}
        {{ exceptions.raise_compiler_error('joinery: ' ~ relation ~ ' has no change data feed (table property '
            ~ 'delta.enableChangeDataFeed is not true). On a Delta table, turn the feed on with `ALTER TABLE '
            ~ relation ~ ' SET TBLPROPERTIES (delta.enableChangeDataFeed = true)`, then build with '
            ~ '--full-refresh: changes made before the feed was on are not in it') }}
    {% endif %}
{% endmacro %}


{% macro _change_feed_check_history(relation, rows, consumed, current) %}
    {#- The commits after `consumed` (history `rows`, newest first) must all be in the feed: none may
        replace or restore the table, turn the feed off, or change the schema in a way the feed cannot
        read across; the version after `consumed` must still be in the log, and no VACUUM may have
        removed its change files. Each is an error that names the version and says to rebuild. -#}
    {% set gaps = ['CREATE OR REPLACE TABLE', 'REPLACE TABLE', 'CREATE OR REPLACE TABLE AS SELECT',
        'REPLACE TABLE AS SELECT', 'RESTORE', 'RENAME COLUMN', 'DROP COLUMNS', 'CHANGE COLUMN', 'TRUNCATE'] %}
    {% set advice = ': the change feed cannot give the changes since the version this model last read ('
        ~ consumed ~ '). Rebuild it from the current table with --full-refresh' %}
    {% set versions = rows | map(attribute='version') | map('int') | list %}
    {% if consumed > current %}
        {{ exceptions.raise_compiler_error('joinery: ' ~ relation ~ ' is at version ' ~ current
            ~ ', older than the version ' ~ consumed ~ ' this model read: it was dropped and created again' ~ advice) }}
    {% elif consumed < current and (consumed + 1) not in versions %}
        {{ exceptions.raise_compiler_error('joinery: version ' ~ (consumed + 1) ~ ' of ' ~ relation
            ~ ' is no longer in its history (log retention, delta.logRetentionDuration)' ~ advice) }}
    {% endif %}
    {% set consumed_at = (rows | selectattr('version', 'equalto', consumed) | first or {}).get('timestamp') %}
    {% for row in rows if row['version'] | int > consumed %}
        {% set parameters = row['operationParameters'] | string %}
        {% set disabled = modules.re.search('enableChangeDataFeed[\\\\"]*\\s*:\\s*[\\\\"]*false', parameters) %}
        {% if row['operation'] in gaps or disabled %}
            {{ exceptions.raise_compiler_error('joinery: version ' ~ row['version'] ~ ' of ' ~ relation ~ ' ('
                ~ row['operation'] ~ (', the change feed turned off' if disabled else '') ~ ') is not in its change feed'
                ~ advice) }}
        {% endif %}
        {% if row['operation'] == 'VACUUM START' %}
            {% do joinery._change_feed_check_vacuum(relation, row, consumed_at, advice) %}
        {% endif %}
    {% endfor %}
{% endmacro %}


{% macro _change_feed_check_vacuum(relation, vacuum, consumed_at, advice) %}
    {#- A VACUUM after the consumed version removes change files older than its retention: an error
        when the consumed version's commit is older than that (or no longer in the history read). -#}
    {% set parameters = vacuum['operationParameters'] | string %}
    {#- The map arrives as JSON text over Thrift and as a Python dict in-process: either quote. -#}
    {% set value = '[\\\\"\']*\\s*:\\s*[\\\\"\']*([0-9]+)' %}
    {% set found = modules.re.search('specifiedRetentionMillis' ~ value, parameters)
        or modules.re.search('defaultRetentionMillis' ~ value, parameters) %}
    {% set retention = found.group(1) | int / 1000 if found else 0 %}
    {% set seconds = joinery._spark_seconds_between(consumed_at, vacuum['timestamp']) %}
    {% if seconds is none or seconds > retention %}
        {{ exceptions.raise_compiler_error('joinery: VACUUM at version ' ~ vacuum['version'] ~ ' of ' ~ relation
            ~ ' removed change files older than ' ~ retention ~ ' s' ~ advice) }}
    {% endif %}
{% endmacro %}
