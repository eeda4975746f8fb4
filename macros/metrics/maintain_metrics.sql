{#- Retention and compaction of a joinery_metrics table: record_metrics writes one directory per model
    per invocation, so the table grows by a few small files each run, forever. Run it with the rest of
    the upkeep, e.g. daily: dbt run-operation joinery.maintain_metrics --args '{retain_days: 90}'
    Docs: macros/metrics/metrics.yml and docs/operations.md, "Upkeep". -#}

{% macro maintain_metrics(schema=none, retain_days=90) %}
    {{ return(adapter.dispatch('maintain_metrics', 'joinery')(schema, retain_days)) }}
{% endmacro %}

{% macro default__maintain_metrics(schema, retain_days) %}
    {% if schema is not none %}
        {% do joinery._validate_identifier(schema, 'schema', 'maintain_metrics') %}
    {% endif %}
    {% if retain_days is not number or retain_days is boolean or retain_days < 0 %}
        {{ joinery._raise_argument_error('maintain_metrics', 'retain_days', retain_days,
            'expected a number of days >= 0: metrics recorded longer ago are deleted') }}
    {% endif %}
    {% if not execute %}
        {{ return(none) }}
    {% endif %}
    {% set relation = api.Relation.create(schema=schema or target.schema, identifier='joinery_metrics') %}
    {% if adapter.get_relation(database=none, schema=relation.schema, identifier='joinery_metrics') is none %}
        {{ log('joinery.maintain_metrics: no table ' ~ relation ~ ', nothing to do', info=true) }}
        {{ return(none) }}
    {% endif %}
    {% set location = joinery._metrics_location(relation) %}
    {#- A compaction interrupted after its commit left the superseded directory: delete it first. -#}
    {% set superseded = (run_query('show tblproperties ' ~ relation).rows | selectattr(0, 'equalto',
        'joinery.metrics_superseded') | map(attribute=1) | list)[:1] %}
    {% if superseded and superseded[0] != location %}
        {% do joinery._metrics_delete_directory(relation, superseded[0]) %}
    {% endif %}
    {% set cutoff = run_query('select cast(current_timestamp() - make_dt_interval(0, 0, 0, '
        ~ (retain_days * 86400) | round(3) ~ ') as string)').rows[0][0] %}
    {% set before = run_query("select count(*), count_if(recorded_at < timestamp '" ~ cutoff ~ "'), "
        ~ "count(distinct directory) from (select recorded_at, regexp_extract(input_file_name(), '^(.*)/[^/]*$', 1) "
        ~ "as directory from " ~ relation ~ ') as metrics').rows[0] %}
    {#- The kept rows go to a new location beside the old one, committed by one metastore call; the
        old directories are deleted after it, so a crash leaves the old table or the new one. -#}
    {% set compacted = location.rstrip('/').rsplit('/', 1)[0] ~ '/joinery_metrics__c'
        ~ modules.datetime.datetime.utcnow().strftime('%Y%m%d%H%M%S') ~ '_' ~ invocation_id[:8] %}
    {% do run_query('insert overwrite directory ' ~ joinery._sql_string(compacted ~ '/compacted')
        ~ " using parquet select * from " ~ relation ~ " where recorded_at >= timestamp '" ~ cutoff ~ "'") %}
    {% do run_query('alter table ' ~ relation ~ " set tblproperties ('joinery.metrics_superseded' = "
        ~ joinery._sql_string(location) ~ ')') %}
    {% do run_query('alter table ' ~ relation ~ ' set location ' ~ joinery._sql_string(compacted)) %}
    {% do joinery._metrics_delete_directory(relation, location) %}
    {% do run_query('alter table ' ~ relation ~ " unset tblproperties if exists ('joinery.metrics_superseded')") %}
    {{ log('joinery.maintain_metrics ' ~ relation ~ ': ' ~ (before[0] - before[1]) ~ ' rows kept, ' ~ before[1]
        ~ ' recorded before ' ~ cutoff ~ ' deleted; ' ~ before[2] ~ ' directories compacted into one', info=true) }}
    {{ return({'rows_kept': before[0] - before[1], 'rows_deleted': before[1], 'directories': before[2]}) }}
{% endmacro %}


{% macro _metrics_location(relation) %}
    {% for row in run_query('describe table extended ' ~ relation) if row[0] == 'Location' %}
        {{ return(row[1]) }}
    {% endfor %}
    {% do exceptions.raise_compiler_error('joinery.maintain_metrics: no location for ' ~ relation) %}
{% endmacro %}


{% macro _metrics_delete_directory(relation, path) %}
    {#- Spark SQL has no statement that deletes a directory, but the metastore deletes the partition
        locations of a managed table it drops: `path` becomes the one partition of a throwaway one. -#}
    {% set janitor = relation.incorporate(path={'identifier': 'joinery_metrics__janitor'}) %}
    {#- A janitor a crash left holds only a superseded directory: dropping it deletes that too. -#}
    {% do run_query('drop table if exists ' ~ janitor) %}
    {% do run_query('create table ' ~ janitor ~ ' (unused int, joinery_level int) using parquet '
        ~ 'partitioned by (joinery_level)') %}
    {% do run_query('alter table ' ~ janitor ~ ' add partition (joinery_level = 1) location '
        ~ joinery._sql_string(path)) %}
    {% do run_query('drop table ' ~ janitor) %}
{% endmacro %}
