{#- Checks of the model's SELECT against the config and the table, shared by both commit paths. -#}

{% macro _upsert_change_columns(changes, settings, columns) %}
    {#- The key, partition and delete-marker columns of the config, as the SELECT spells them
        ({'keys', 'partition_by', 'deleted', 'partial': the partial-row marker, contract.sql}); a
        missing or unusable one fails the run. -#}
    {% set names = columns | map(attribute='name') | list %}
    {% set found = {'keys': [], 'partition_by': [], 'deleted': joinery._find_column(names, settings.deleted_column),
        'partial': joinery._find_column(names, joinery._upsert_partial_column())} %}
    {% for argument, wanted in [('unique_key', settings.unique_key), ('partition_by', settings.partition_by)] %}
        {% for column in wanted %}
            {% set name = joinery._find_column(names, column) %}
            {% if name is none %}
                {{ joinery._upsert_argument_error(argument, column,
                    "no such column in the model's SELECT; its columns are " ~ tojson(names), changes) }}
            {% endif %}
            {% do found['keys' if argument == 'unique_key' else 'partition_by'].append(name) %}
        {% endfor %}
    {% endfor %}
    {% for key in found['keys'] %}
        {% set key_type = (columns | selectattr('name', 'equalto', key) | first)['type'] %}
        {% if not joinery._is_comparable_type(key_type) %}
            {{ joinery._upsert_argument_error('unique_key', key, 'the column is of type ' ~ key_type
                ~ ', which Spark cannot compare (a map or a variant): a key must be comparable; key on '
                ~ 'columns that identify the row, or on a string form such as to_json(...) in the SELECT', changes) }}
        {% endif %}
    {% endfor %}
    {% if found.deleted is not none %}
        {% set deleted_type = (columns | selectattr('name', 'equalto', found.deleted) | first)['type'] %}
        {% if deleted_type | lower != 'boolean' %}
            {{ joinery._upsert_argument_error('deleted_column', found.deleted,
                'the delete marker must be a boolean column, but it is ' ~ deleted_type, changes) }}
        {% endif %}
    {% endif %}
    {{ return(found) }}
{% endmacro %}


{% macro _upsert_tombstone_columns(change_info, settings, changes) %}
    {#- The tombstone columns as the SELECT spells them; one it lacks fails the run. Checked by
        rewrite.sql before a parquet run writes its version, so a first build it fails leaves no
        directory, and by tombstones.sql. -#}
    {% set names = change_info.columns | map(attribute='name') | list %}
    {% set versions = [] %}
    {% for column in settings.tombstones or [] %}
        {% set found = joinery._find_column(names, column) %}
        {% if found is none %}
            {{ joinery._upsert_argument_error('tombstones', settings.tombstones, 'column ' ~ column
                ~ " is not a column of the model's SELECT; its columns are " ~ tojson(names), changes) }}
        {% endif %}
        {% do versions.append(found) %}
    {% endfor %}
    {{ return(versions) }}
{% endmacro %}


{% macro _upsert_partition_values(text, changes=none) %}
    {#- Partition value lists as _partition_list_sql writes them; a NULL value fails the run: partition
        columns of a joinery_upsert model must not be NULL. -#}
    {% set partitions = joinery._parse_partition_values(text) %}
    {% for values in partitions if none in values %}
        {{ joinery._upsert_fail('a partition column is NULL for some rows (an empty string is one too: Spark '
            ~ 'stores it as the NULL partition); partition columns of a joinery_upsert model must not be NULL',
            changes) }}
    {% endfor %}
    {{ return(partitions) }}
{% endmacro %}


{% macro _upsert_live_condition(change_info, alias) %}
    {#- True for changed rows that upsert (not deletes); a NULL marker counts as not deleted. -#}
    {% if change_info.deleted is none %}
        {{ return('true') }}
    {% endif %}
    {{ return('not coalesce(' ~ alias ~ '.' ~ joinery._quote_identifier(change_info.deleted) ~ ', false)') }}
{% endmacro %}


{% macro _upsert_types_compatible(target_type, change_type) %}
    {#- A changed column may have the target's type, be untyped NULL, or a type whose every value the
        target's type holds exactly: a narrower integer, or an int or float into a double. -#}
    {% set integers = ['tinyint', 'smallint', 'int', 'bigint'] %}
    {% set t = target_type | lower %}
    {% set c = change_type | lower %}
    {% if t == c or c == 'void' %}
        {{ return(true) }}
    {% endif %}
    {% if c in integers and t in integers %}
        {{ return(integers.index(c) <= integers.index(t)) }}
    {% endif %}
    {#- Values a double holds exactly: not a bigint's above 2^53, and a float is not a bigint. -#}
    {{ return(t == 'double' and c in ['tinyint', 'smallint', 'int', 'float']) }}
{% endmacro %}


{% macro _upsert_check_schema_unchanged(settings, changes, target_sql, target_names, change_names) %}
    {#- on_schema_change='fail': an incremental run whose SELECT adds or drops columns of the table
        stops before it writes anything. Names compare ignoring case, as Spark resolves them. -#}
    {% if settings.on_schema_change != 'fail' %}
        {{ return(none) }}
    {% endif %}
    {% set added = [] %}
    {% for name in change_names if joinery._find_column(target_names, name) is none %}
        {% do added.append(name) %}
    {% endfor %}
    {% set removed = [] %}
    {% for name in target_names if joinery._find_column(change_names, name) is none %}
        {% do removed.append(name) %}
    {% endfor %}
    {% if added or removed %}
        {{ joinery._upsert_argument_error('on_schema_change', 'fail', 'the model adds columns '
            ~ tojson(added) ~ ' and no longer selects ' ~ tojson(removed) ~ ' of ' ~ target_sql
            ~ '; run it with --full-refresh, or set on_schema_change to append_new_columns', changes) }}
    {% endif %}
{% endmacro %}
