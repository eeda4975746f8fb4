{#- The changed rows as the commit statement reads them, with the checks that need every row made
    in that same statement: one row per key, and no NULL partition value. Spark fails the statement
    with raise_error's message, so a failed check writes nothing. -#}

{% macro _upsert_checked_rows_sql(sql, found, settings) %}
    {#- `select * from (<sql>)` plus `_joinery_rows_of_key`, failing on a key with several rows or a
        row with a NULL partition column. The window needs the rows grouped by key: free when the
        SELECT ends in a ranking by key (compact, changelog_state), one exchange of the changed rows
        otherwise. `found`: the key and partition columns as the SELECT spells them. -#}
    {% set key_struct = [] %}
    {% for key in found['keys'] %}
        {% do key_struct.append(joinery._sql_string(key) ~ ', ' ~ joinery._quote_identifier(key)) %}
    {% endfor %}
    {% set checks = ['if(_joinery_rows_of_key > 1, raise_error(concat(' ~ joinery._sql_string(joinery._upsert_where()
        ~ ': the changed rows hold ') ~ ', cast(_joinery_rows_of_key as string), ' ~ joinery._sql_string(' rows for the key ')
        ~ ', to_json(named_struct(' ~ key_struct | join(', ') ~ ')), ' ~ joinery._sql_string(' (unique_key '
        ~ tojson(found['keys']) ~ '); an upsert batch needs one row per key: deduplicate it in the model (e.g. '
        ~ 'joinery.dedup_latest)') ~ ')), true)'] %}
    {% for column in found.partition_by %}
        {% do checks.append('if(' ~ joinery._quote_identifier(column) ~ ' is null, raise_error('
            ~ joinery._sql_string(joinery._upsert_where() ~ ': partition column ' ~ column ~ ' is NULL for some rows (an '
            ~ 'empty string is one too: Spark stores it as the NULL partition); partition columns of a joinery_upsert '
            ~ 'model must not be NULL') ~ '), true)') %}
    {% endfor %}
    {{ return('select * from (\n    select *, count(*) over (partition by ' ~ joinery._quoted_column_list(found['keys'])
        ~ ') as _joinery_rows_of_key\n    from (\n' ~ sql ~ '\n    ) as model_rows\n) as counted\nwhere '
        ~ checks | join('\n    and ')) }}
{% endmacro %}


{% macro _upsert_stored_names(columns, found) %}
    {#- The names of the columns the table stores: the SELECT's without the delete marker and the
        partial-row marker, partition columns last (Spark stores them after the data columns). -#}
    {% set names = columns | map(attribute='name') | reject('equalto', found.deleted)
        | reject('equalto', found.get('partial')) | list %}
    {% set ordered = names | reject('in', found.partition_by) | list %}
    {{ return(ordered + found.partition_by) }}
{% endmacro %}
