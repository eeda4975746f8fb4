{#- Reading the columns of a relation. Guarded by `execute`, so parsing, `dbt ls` and linting never
    query Spark: at parse time these return empty results and callers must not fail on them. -#}

{% macro _columns_of(relation, required=true) %}
    {#- Columns of a relation as adapter Column objects (name, dtype), in table order. A relation
        that does not exist is an error, or no columns when not `required` (a generic test compiled
        before its relations are built, e.g. by `dbt compile`). -#}
    {% if not execute %}
        {{ return([]) }}
    {% endif %}
    {#- Under `dbt build --empty` a ref() or source() renders as `(select * from t where false limit 0)`,
        and in a microbatch model as a filtered subquery: `describe` takes neither, so the relation
        itself is described. -#}
    {% if relation.incorporate is defined %}
        {% set relation = relation.incorporate(limit=none, event_time_filter=none) %}
    {% endif %}
    {#- A ref() of an ephemeral model, and every input of a dbt unit test, is a CTE of the calling
        model's SQL: Spark has no table to describe, and its SQL is not compiled yet. -#}
    {% if relation.is_cte is defined and relation.is_cte %}
        {% do exceptions.raise_compiler_error('joinery: input ' ~ relation ~ ' is a CTE (an ephemeral model, or '
            ~ 'an input of a dbt unit test): joinery reads the columns of its inputs from Spark, which has no '
            ~ 'table for a CTE. Materialize that model as a view or a table. dbt unit tests do not support '
            ~ "models that read their inputs' columns (introspective queries)") %}
    {% endif %}
    {% set columns = adapter.get_columns_in_relation(relation) %}
    {#- dbt-spark returns no columns for a relation Spark does not have; every table has some. -#}
    {% if not columns and required %}
        {% do exceptions.raise_compiler_error('joinery: input ' ~ relation ~ ' does not exist (Spark has no table or '
            ~ 'view of that name). Build it first: dbt builds a model after the ref()s it declares (a ref() used '
            ~ 'only inside a Jinja condition needs a `-- depends_on: {{ ref(...) }}` line), or check its name') %}
    {% endif %}
    {% set fixed = joinery._parseable_struct_types(relation, columns | map(attribute='name') | list,
        columns | map(attribute='dtype') | list) %}
    {% if not fixed %}
        {{ return(columns) }}
    {% endif %}
    {% set result = [] %}
    {% for column in columns %}
        {% do result.append(api.Column.create(column.name, fixed[column.name]) if column.name in fixed else column) %}
    {% endfor %}
    {{ return(result) }}
{% endmacro %}


{% macro _parseable_struct_types(relation, names, types) %}
    {#- {column name: type} for the columns whose described type Spark cannot parse back. `describe`
        prints a struct as Spark's simpleString, which cuts a struct of more than 25 fields
        (`... 5 more fields`) and leaves field names bare (`struct<page-view:int>`); such types are
        read again from `describe table extended ... as json` (Spark 4, joinery._describe_as_json): one
        more statement for a relation with a struct column, none for others. Other types stay as described: the JSON
        form spells a char or varchar field of a struct as string. -#}
    {% if not execute or 'struct<' not in (types | join(' ') | lower) %}
        {{ return({}) }}
    {% endif %}
    {% set described = joinery._describe_as_json(relation) %}
    {% set fixed = {} %}
    {% for column in described['columns'] %}
        {% set index = names.index(column['name']) if column['name'] in names else none %}
        {% set exact = joinery._spark_type_sql(column['type']) %}
        {% if index is not none and 'struct<' in types[index] | lower
            and (' more fields' in types[index] or '`' in exact) %}
            {% do fixed.update({column['name']: exact}) %}
        {% endif %}
    {% endfor %}
    {{ return(fixed) }}
{% endmacro %}


{% macro _spark_type_sql(spec) %}
    {#- A type of `describe ... as json` as Spark SQL, spelled as `describe` spells the types it
        prints in full (lowercase, no spaces in nested types), field names quoted only where they
        need it. Field nullability and comments are not kept, as `describe` does not print them. -#}
    {% set name = spec['name'] %}
    {% if name == 'struct' %}
        {% set fields = [] %}
        {% for field in spec['fields'] %}
            {% set name_sql = field['name'] if modules.re.match('^[A-Za-z_][A-Za-z0-9_]*$', field['name'])
                else joinery._quote_identifier(field['name']) %}
            {% do fields.append(name_sql ~ ':' ~ joinery._spark_type_sql(field['type'])) %}
        {% endfor %}
        {{ return('struct<' ~ fields | join(',') ~ '>') }}
    {% elif name == 'array' %}
        {{ return('array<' ~ joinery._spark_type_sql(spec['element_type']) ~ '>') }}
    {% elif name == 'map' %}
        {{ return('map<' ~ joinery._spark_type_sql(spec['key_type']) ~ ','
            ~ joinery._spark_type_sql(spec['value_type']) ~ '>') }}
    {% elif name == 'decimal' %}
        {{ return('decimal(' ~ spec['precision'] ~ ',' ~ spec['scale'] ~ ')') }}
    {% elif spec.get('length') is not none %}
        {{ return(name ~ '(' ~ spec['length'] ~ ')') }}
    {% elif spec.get('start_unit') is not none %}
        {{ return(name ~ ' ' ~ spec['start_unit'] ~ (' to ' ~ spec['end_unit']
            if spec.get('end_unit') not in [none, spec['start_unit']] else '')) }}
    {% elif spec.get('collation') not in [none, 'UTF8_BINARY'] %}
        {{ return(name ~ ' collate ' ~ spec['collation']) }}
    {% endif %}
    {{ return(name) }}
{% endmacro %}


{% macro _column_names(relation, required=true) %}
    {{ return(joinery._columns_of(relation, required) | map(attribute='name') | list) }}
{% endmacro %}


{% macro _find_column(names, wanted) %}
    {#- The name in `names` equal to `wanted` ignoring case (Spark resolves columns case-insensitively),
        or none. -#}
    {% for name in names if name | lower == wanted | lower %}
        {{ return(name) }}
    {% endfor %}
    {{ return(none) }}
{% endmacro %}


{% macro _require_columns(relation, columns, argument, macro_name, available=none) %}
    {#- Every name in `columns` must be a column of `relation`; returns them spelled as in the relation.
        `available`: the relation's column names, when the caller already read them. Skipped at parse
        time (no columns known). -#}
    {% if not execute %}
        {{ return(columns) }}
    {% endif %}
    {% set available = available if available is not none else joinery._column_names(relation) %}
    {% set found = [] %}
    {% set missing = [] %}
    {% for column in columns %}
        {% set match = joinery._find_column(available, column) %}
        {% if match is none %}
            {% do missing.append(column) %}
        {% else %}
            {% do found.append(match) %}
        {% endif %}
    {% endfor %}
    {% if missing %}
        {{ joinery._raise_argument_error(macro_name, argument, missing,
            'no such column in ' ~ relation ~ '; its columns are ' ~ tojson(available)) }}
    {% endif %}
    {{ return(found) }}
{% endmacro %}


{% macro _equal_rows_columns(expected, columns, expected_columns) %}
    {#- The columns the `equal_rows` test compares: `columns` if given, else those of `expected`
        (`expected_columns`, read once by the test). -#}
    {% if expected is none %}
        {{ joinery._raise_argument_error('equal_rows', 'expected', expected,
            'expected a relation: ref() or source()') }}
    {% endif %}
    {% if columns is not none %}
        {{ return(joinery._as_list(columns, 'columns', 'equal_rows')) }}
    {% endif %}
    {{ return(expected_columns | map(attribute='name') | list) }}
{% endmacro %}


{% macro _describe_relation(relation) %}
    {#- Columns, partition columns, location, type and provider (file format, lower case) of a table
        (or the columns of a view), from one `describe table extended`, and a second one as JSON when
        a column holds a struct (_parseable_struct_types). The one parser of `describe` output. -#}
    {% set rows = run_query('describe table extended ' ~ relation).rows %}
    {% set info = {'columns': [], 'partition_columns': [], 'location': none, 'type': none, 'provider': none} %}
    {% set section = namespace(name='columns') %}
    {% for row in rows %}
        {% set key = (row[0] or '') | trim %}
        {% set value = (row[1] or '') | trim %}
        {% if key == '# Partition Information' %}
            {% set section.name = 'partitions' %}
        {% elif key == '# Detailed Table Information' %}
            {% set section.name = 'details' %}
        {% elif key == '# Metadata Columns' %}
            {#- Iceberg's (_spec_id, _file, ...), listed after its partition columns. -#}
            {% set section.name = 'other' %}
        {% elif key == '' or key.startswith('#') %}
            {% if section.name == 'columns' %}{% set section.name = 'other' %}{% endif %}
        {% elif section.name == 'columns' %}
            {% do info['columns'].append({'name': key, 'type': value}) %}
        {% elif section.name == 'partitions' %}
            {% do info['partition_columns'].append(key) %}
        {% elif section.name == 'details' and key in ['Location', 'Type', 'Provider'] %}
            {% do info.update({key | lower: value | lower if key == 'Provider' else value}) %}
        {% endif %}
    {% endfor %}
    {% set fixed = joinery._parseable_struct_types(relation, info['columns'] | map(attribute='name') | list,
        info['columns'] | map(attribute='type') | list) %}
    {% for column in info['columns'] if column['name'] in fixed %}
        {% do column.update({'type': fixed[column['name']]}) %}
    {% endfor %}
    {{ return(info) }}
{% endmacro %}


{% macro _table_properties(relation) %}
    {#- A table's properties (`show tblproperties`) as a dict. -#}
    {% set properties = {} %}
    {% for row in run_query('show tblproperties ' ~ relation).rows %}
        {% do properties.update({row[0]: row[1]}) %}
    {% endfor %}
    {{ return(properties) }}
{% endmacro %}


{% macro _relation_provider(relation) %}
    {#- The table's provider (delta, iceberg, parquet, hive, ...), lower case: from dbt's relation
        cache (`show table extended`) when it has it, else from one `describe table extended`. -#}
    {% set found = modules.re.search('(?m)^Provider: *(\\S+)', relation.information or '') %}
    {% if found %}
        {{ return(found.group(1) | lower) }}
    {% endif %}
    {% for row in run_query('describe table extended ' ~ relation.render()).rows
        if (row[0] or '') | trim == 'Provider' %}
        {{ return(row[1] | trim | lower) }}
    {% endfor %}
    {{ return(none) }}
{% endmacro %}


{% macro _row_columns(names_json, row_type) %}
    {#- [{name, type}] of a row: its field names in order from `names_json` (to_json of the row with
        NULL fields kept, so names are exact), their types from `row_type` (typeof(struct(...)),
        `struct<name:type,...>`, which does not quote names): each type runs from after `<name>:`
        to the next comma outside brackets. -#}
    {% set names = (fromjson(names_json) or {}).keys() | list %}
    {% set body = row_type[7:-1] %}
    {% set columns = [] %}
    {% set cursor = namespace(at=0) %}
    {% for name in names %}
        {% if body[cursor.at:cursor.at + name | length + 1] != name ~ ':' %}
            {{ exceptions.raise_compiler_error('joinery: cannot read the type of column ' ~ name ~ ' from '
                ~ row_type) }}
        {% endif %}
        {% set scan = namespace(depth=0, end=body | length) %}
        {% for at in range(cursor.at + name | length + 1, body | length) if scan.end == body | length %}
            {% if body[at] in '<(' %}
                {% set scan.depth = scan.depth + 1 %}
            {% elif body[at] in '>)' %}
                {% set scan.depth = scan.depth - 1 %}
            {% elif body[at] == ',' and scan.depth == 0 %}
                {% set scan.end = at %}
            {% endif %}
        {% endfor %}
        {% do columns.append({'name': name, 'type': body[cursor.at + name | length + 1:scan.end]}) %}
        {% set cursor.at = scan.end + 1 %}
    {% endfor %}
    {{ return(columns) }}
{% endmacro %}


{% macro _columns_of_many(relations) %}
    {#- The columns of several relations, as _columns_of gives them (a list per relation, in order),
        from one statement: Spark's analysis of an empty form of each (`typeof` and `to_json` of its
        row; nothing is read). A relation with a struct column is described again by _columns_of,
        whose types keep struct field names Spark would need quoted. The relations must exist: a
        missing one fails the statement with Spark's message naming it. -#}
    {% if not execute %}
        {% set empty = [] %}
        {% for relation in relations %}
            {% do empty.append([]) %}
        {% endfor %}
        {{ return(empty) }}
    {% endif %}
    {% set parts = [] %}
    {% set sources = ['(select 1 as joinery_one) as joinery_one'] %}
    {% for relation in relations %}
        {% set alias = 'joinery_r' ~ loop.index0 %}
        {% do parts.extend(["to_json(struct(" ~ alias ~ ".*), map('ignoreNullFields', 'false'))",
            'typeof(struct(' ~ alias ~ '.*))']) %}
        {% do sources.append('left join (select * from ' ~ relation ~ ' limit 0) as ' ~ alias ~ ' on true') %}
    {% endfor %}
    {% set row = run_query('select ' ~ parts | join(', ') ~ '\nfrom ' ~ sources | join('\n')).rows[0] %}
    {% set found = [] %}
    {% for relation in relations %}
        {% set row_type = row[loop.index0 * 2 + 1] %}
        {% if 'struct<' in row_type[7:] %}
            {% do found.append(joinery._columns_of(relation)) %}
        {% else %}
            {% set columns = [] %}
            {% for column in joinery._row_columns(row[loop.index0 * 2], row_type) %}
                {% do columns.append(api.Column.create(column.name, column.type)) %}
            {% endfor %}
            {% do found.append(columns) %}
        {% endif %}
    {% endfor %}
    {{ return(found) }}
{% endmacro %}
