{#- What model authors call in a joinery_upsert model: whether this run is incremental, and the
    watermark of rows already applied. -#}

{% macro is_incremental() %}
    {{ return(adapter.dispatch('is_incremental', 'joinery')()) }}
{% endmacro %}

{% macro default__is_incremental() %}
    {#- True when this joinery_upsert model's table exists as a table built by joinery_upsert (or, for
        a delta/iceberg model, is a table of that format) and this is not a --full-refresh: the
        SELECT then yields only changes. -#}
    {% if not execute or model is not mapping or model.get('resource_type') != 'model' %}
        {{ return(false) }}
    {% endif %}
    {% if config.get('materialized') != 'joinery_upsert' or should_full_refresh() %}
        {{ return(false) }}
    {% endif %}
    {% set relation = adapter.get_relation(database=this.database, schema=this.schema, identifier=this.identifier) %}
    {% if relation is none or not relation.is_table %}
        {{ return(false) }}
    {% endif %}
    {% set file_format = (config.get('file_format') or 'parquet') | lower %}
    {% if file_format in ('delta', 'iceberg') %}
        {#- Only a table of that format is merged into; another (a parquet table switched to delta) is
            rebuilt from the full SELECT. -#}
        {{ return(joinery.relation_provider(relation) == file_format) }}
    {% endif %}
    {#- A parquet/Hive table joinery did not build is rebuilt from the full SELECT on the first run. -#}
    {{ return('joinery.root' in joinery.table_properties(relation.render())) }}
{% endmacro %}


{% macro previous_max(column, default=none) %}
    {{ return(adapter.dispatch('previous_max', 'joinery')(column, default)) }}
{% endmacro %}

{% macro default__previous_max(column, default=none) %}
    {#- The watermark: `(select coalesce(max(column), default) from this)` on an incremental run,
        else `default` (NULL when none). `column` is a column of this model's table; `default` a
        SQL literal such as "timestamp'1900-01-01 00:00:00'". -#}
    {% do joinery.validate_identifier(column, 'column', 'previous_max') %}
    {% set fallback = joinery.sql_expression(default) if default is not none else 'null' %}
    {% if not joinery.is_incremental() %}
        {{ return('(' ~ fallback ~ ')') }}
    {% endif %}
    {{ return(joinery.watermark_subquery(column, fallback)) }}
{% endmacro %}


{% macro watermark_subquery(column, fallback) %}
    {#- `(select coalesce(max(column), fallback) from this)`, for callers that already know the run
        is incremental (each is_incremental() is a `show tblproperties`). -#}
    {{ return('(select coalesce(max(' ~ joinery.quote_identifier(column) ~ '), ' ~ fallback ~ ') from '
        ~ this ~ ')') }}
{% endmacro %}


{% macro new_rows_filter(source_column, column=none) %}
    {{ return(adapter.dispatch('new_rows_filter', 'joinery')(source_column, column)) }}
{% endmacro %}

{% macro default__new_rows_filter(source_column, column=none) %}
    {#- A WHERE condition keeping source rows that arrived after the last applied batch:
        `source_column > (select max(column) from this)` on an incremental run (true while the table
        is empty), `true` otherwise. `source_column` is a SQL expression over the source (e.g.
        `deltas.loaded_at`); `column` the table's column holding it (default: the expression's last
        name part). -#}
    {% set stored = column if column is not none else (source_column | string).split('.')[-1] | replace('`', '') %}
    {% do joinery.validate_identifier(stored, 'column', 'new_rows_filter') %}
    {% if not joinery.is_incremental() %}
        {{ return('true') }}
    {% endif %}
    {#- Not previous_max, which would ask is_incremental() a second time. -#}
    {{ return('coalesce(' ~ joinery.sql_expression(source_column) ~ ' > ' ~ joinery.watermark_subquery(stored, 'null')
        ~ ', true)') }}
{% endmacro %}


{% macro upsert_merge_sql(target, source, unique_key, columns, deleted_column=none, target_filter=none) %}
    {{ return(adapter.dispatch('upsert_merge_sql', 'joinery')(target, source, unique_key, columns, deleted_column,
        target_filter)) }}
{% endmacro %}

{% macro default__upsert_merge_sql(target, source, unique_key, columns, deleted_column=none, target_filter=none) %}
    {#- The MERGE joinery_upsert runs on delta/iceberg tables: delete matched keys whose marker is
        true, update the other matched keys, insert new keys that are not deletes. Columns are listed
        (not `*`) because the source also has the delete marker, which is not stored. `target_filter`
        (a condition on `target.`, e.g. its partitions the changes fall in) joins the ON clause, so
        that the MERGE reads only the files it can match. -#}
    {% set keys = joinery.as_list(unique_key, 'unique_key', 'upsert_merge_sql') %}
    {% set names = joinery.as_list(columns, 'columns', 'upsert_merge_sql') %}
    {% set deleted = 'coalesce(source.' ~ joinery.quote_identifier(deleted_column)
        ~ ', false)' if deleted_column else 'false' %}
    {% set on = [] %}
    {% for key in keys %}
        {% do on.append('target.' ~ joinery.quote_identifier(key) ~ ' <=> source.' ~ joinery.quote_identifier(key)) %}
    {% endfor %}
    {% set updates = [] %}
    {% for name in names if name not in keys %}
        {% do updates.append('target.' ~ joinery.quote_identifier(name) ~ ' = source.'
            ~ joinery.quote_identifier(name)) %}
    {% endfor %}
    {% set merge %}
merge into {{ target }} as target
using {{ source }} as source
on {{ on | join(' and ') }}
{%- if target_filter %}
    and {{ target_filter }}
{%- endif %}
when matched and {{ deleted }} then delete
{%- if updates %}
when matched then update set {{ updates | join(', ') }}
{%- endif %}
when not matched and not {{ deleted }} then insert ({{ joinery.quoted_column_list(names) }})
    values ({{ joinery.quoted_column_list(names, 'source') }})
    {%- endset %}
    {{ return(merge) }}
{% endmacro %}
