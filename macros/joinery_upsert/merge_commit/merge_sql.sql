{#- The MERGE statement of joinery_upsert on delta and iceberg tables, public so that a project can
    override it (dispatch) or issue it itself. -#}

{% macro upsert_merge_sql(target, source, unique_key, columns, deleted_column=none, target_filter=none,
    column_types=none, null_columns=none, schema_evolution=false, versions=none, partial_column=none,
    partial_columns=none) %}
    {{ return(adapter.dispatch('upsert_merge_sql', 'joinery')(target, source, unique_key, columns, deleted_column,
        target_filter, column_types, null_columns, schema_evolution, versions, partial_column, partial_columns)) }}
{% endmacro %}

{% macro default__upsert_merge_sql(target, source, unique_key, columns, deleted_column=none, target_filter=none,
    column_types=none, null_columns=none, schema_evolution=false, versions=none, partial_column=none,
    partial_columns=none) %}
    {#- Delete matched keys whose marker is true, update the other matched keys, insert new keys that
        are not deletes. Columns are listed (not `*`) because the source also has the delete marker,
        which is not stored. `target_filter` (a condition on `target.`, e.g. the partitions the
        changes fall in) joins the ON clause, so that the MERGE reads only the files it can match.
        `column_types` ({column: type}): a matched row equal to its change in every column is left
        as it is (no rewritten row, no deletion vector). `null_columns`: columns of the table the
        source lacks, set to NULL in the rows it updates. `schema_evolution`: the source's columns
        that `column_types` does not name, which the table lacks, are added in the MERGE's own
        commit. `versions` (the columns that order a key's versions, greatest first compared): a
        matched row is updated or deleted only when its change's version is newer, so a change may
        hold versions older than the table's and they change nothing. `partial_column`: a boolean
        column of the source marking partial rows, which update only `partial_columns` of a matched
        row and never insert. Assignments name the target's columns bare: Delta resolves a column
        added by schema evolution only so. -#}
    {% set keys = joinery._as_list(unique_key, 'unique_key', 'upsert_merge_sql') %}
    {% set names = joinery._as_list(columns, 'columns', 'upsert_merge_sql') %}
    {% set deleted = 'coalesce(source.' ~ joinery._quote_identifier(deleted_column)
        ~ ', false)' if deleted_column else 'false' %}
    {% set newer = ' and ' ~ joinery._newer_version_sql(versions, 'source', 'target') if versions else '' %}
    {% set partial = 'coalesce(source.' ~ joinery._quote_identifier(partial_column) ~ ', false)'
        if partial_column else none %}
    {% set partial_updates = joinery._upsert_merge_assignments(partial_columns or [], [], none, none).updates %}
    {% set assignments = joinery._upsert_merge_assignments(names, keys, column_types, null_columns) %}
    {% set updates = assignments.updates %}
    {% set same = assignments.same %}
    {% set merge %}
merge {{ 'with schema evolution ' if schema_evolution else '' }}into {{ target }} as target
using {{ source }} as source
on {{ joinery._key_match(keys, 'target', 'source') }}
{%- if target_filter %}
    and {{ target_filter }}
{%- endif %}
when matched{{ newer }} and {{ deleted }} then delete
{%- if partial and partial_updates %}
when matched and {{ partial }} then update set {{ partial_updates | join(', ') }}
{%- endif %}
{%- if updates %}
when matched{{ newer }}{{ ' and not (' ~ same | join(' and ') ~ ')' if same else '' }} then update set {{ updates | join(', ') }}
{%- endif %}
when not matched and not {{ deleted }}{{ ' and not ' ~ partial if partial else '' }} then insert ({{ joinery._quoted_column_list(names) }})
    values ({{ joinery._quoted_column_list(names, 'source') }})
    {%- endset %}
    {{ return(merge) }}
{% endmacro %}


{% macro _upsert_merge_assignments(names, keys, column_types, null_columns) %}
    {#- The UPDATE's assignments of `names` (the keys left out) and `null_columns` (set to NULL), and
        with `column_types` the conditions that a matched row equals its change
        ({'updates', 'same'}, default__upsert_merge_sql). -#}
    {% set updates = [] %}
    {% set same = [] %}
    {% for name in names if name not in keys %}
        {% set quoted = joinery._quote_identifier(name) %}
        {% do updates.append(quoted ~ ' = source.' ~ quoted) %}
        {#- A column the table lacks reads NULL in every stored row. -#}
        {% if column_types is mapping and name in column_types %}
            {% do same.append(joinery._same_value_sql('target.' ~ quoted, 'source.' ~ quoted, column_types[name])) %}
        {% elif column_types is mapping %}
            {% do same.append('source.' ~ quoted ~ ' is null') %}
        {% endif %}
    {% endfor %}
    {% for name in null_columns or [] %}
        {% do updates.append(joinery._quote_identifier(name) ~ ' = null') %}
        {% if column_types is mapping %}
            {% do same.append('target.' ~ joinery._quote_identifier(name) ~ ' is null') %}
        {% endif %}
    {% endfor %}
    {{ return({'updates': updates, 'same': same}) }}
{% endmacro %}
