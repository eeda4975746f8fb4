{#- How joinery_upsert stops a run (one error prefix, the run's cached changes dropped first), and
    how either commit path ends a run that changes nothing. -#}

{% macro _upsert_fail(message, changes=none) %}
    {#- The one way joinery_upsert stops a run: drop the run's cached changes first (when staged), so
        that a long-lived session (the embedded target's, a Thrift server's) does not keep them, then
        raise with the one prefix, `joinery_upsert (model <name>): `. An error Spark raises cannot be
        caught in Jinja; that run's cache is left to Spark. -#}
    {% if changes is not none %}
        {% do joinery._upsert_drop_changes(changes) %}
    {% endif %}
    {{ exceptions.raise_compiler_error(joinery._upsert_where() ~ ': ' ~ message) }}
{% endmacro %}


{% macro _upsert_where() %}
    {#- The one error prefix of joinery_upsert: `joinery_upsert (model <name>)`. -#}
    {{ return('joinery_upsert (model ' ~ model.name ~ ')') }}
{% endmacro %}


{% macro _upsert_argument_error(argument, value, allowed, changes=none) %}
    {#- _upsert_fail for a config: names the argument, the bad value and what is allowed. -#}
    {{ joinery._upsert_fail('argument `' ~ argument ~ '` got ' ~ tojson(value) ~ ': ' ~ allowed, changes) }}
{% endmacro %}


{% macro _upsert_check_one_row_per_key(stats, keys, changes) %}
    {#- Both commit paths apply one row per key: the preflight's figures (pipeline/preflight.sql) name
        the key with the most rows, and more than one stops the run. -#}
    {% if stats.duplicates > 1 %}
        {{ joinery._upsert_fail('the changed rows hold ' ~ stats.duplicates ~ ' rows for the key '
            ~ stats.duplicate_key ~ ' (unique_key ' ~ tojson(keys) ~ '); an upsert batch needs one row '
            ~ 'per key: deduplicate it in the model (e.g. joinery.dedup_latest)', changes) }}
    {% endif %}
{% endmacro %}


{% macro _upsert_report_unchanged(target, message) %}
    {#- A run that leaves the table unchanged, on either commit path: its result and its log line. -#}
    {% do store_raw_result('main', message=message, code='OK', rows_affected=0) %}
    {{ log('joinery_upsert ' ~ target ~ ': ' ~ message ~ ', table left unchanged', info=true) }}
{% endmacro %}
