{#- Where joinery_upsert's versions live on storage, and how they are created and deleted with SQL
    statements only: roots, version directories, partition specs and locations, DDL, work tables
    and the janitor that deletes directories through the Hive metastore. -#}

{% macro _upsert_schema_location(schema) %}
    {% for row in run_query('describe schema extended ' ~ joinery._quote_identifier(schema)).rows
        if row[0] | trim == 'Location' %}
        {{ return(row[1] | trim) }}
    {% endfor %}
    {{ joinery._upsert_fail('cannot find the location of schema ' ~ schema) }}
{% endmacro %}


{% macro _upsert_qualified_location(relation, location) %}
    {#- `location` as the metastore spells it (`file:/mnt/lake`, `hdfs://namenode:8020/lake`). The
        metastore normalizes a path when it stores it, so a path as written would not compare equal
        with the locations it reports (which directories are this table's versions, the derived
        partition locations). Three statements: a throwaway external table at the path, described,
        dropped (an external table's files stay). A root is qualified once, when the table is
        built, and stored so (`joinery.root`). -#}
    {% set probe = joinery._upsert_work_table(relation, 'probe') %}
    {% do run_query('create table ' ~ probe ~ ' (unused int) using parquet location '
        ~ joinery._sql_string(location)) %}
    {% set qualified = joinery._describe_relation(probe)['location'] %}
    {% do run_query('drop table ' ~ probe) %}
    {{ return(qualified) }}
{% endmacro %}


{% macro _upsert_version_directory(root, run_id) %}
    {#- Where a run writes its version: `v_<run id>` under the table's root. Not `_v...` or `.v...`:
        Hadoop's FileInputFormat, which Hive SerDe tables read through, skips such paths, the table
        location included. No `=` in the name: Hive's dynamic-partition load reads every `name=value`
        folder of the written path as a partition. -#}
    {{ return(root ~ '/v_' ~ run_id) }}
{% endmacro %}


{% macro _upsert_is_version_directory(root, path) %}
    {#- A directory joinery may delete: a version directory of this table's root, or a partition in one. -#}
    {{ return(path is string and path.startswith(root ~ '/v_')) }}
{% endmacro %}


{% macro _upsert_work_table(relation, suffix) %}
    {#- The name of this run's work table `<table>__joinery_<suffix>` (the stage, the janitor), after
        dropping one that a killed run left. dbt's relation cache listed the schema's tables at the
        start of the invocation, so when there is none this costs no statement. Each use ends by
        dropping the table, so a second use in the same run finds none either. -#}
    {% set identifier = relation.identifier ~ '__joinery_' ~ suffix %}
    {% set leftover = adapter.get_relation(database=relation.database, schema=relation.schema,
        identifier=identifier) %}
    {% if leftover is not none %}
        {% do adapter.drop_relation(leftover) %}
    {% endif %}
    {{ return(relation.schema ~ '.' ~ identifier) }}
{% endmacro %}


{% macro _upsert_delete_directories(relation, root, paths) %}
    {#- Delete version directories of this table's root, or partition directories in them, and each
        folder that deleting them leaves empty, up to the version directory (never the root).
        Deleting in bulk is one metastore call for any number of directories, but leaves their
        parent folders; dropping a directory as a partition deletes the parents it empties, at a
        metastore call per directory (_upsert_janitor). So the directories go in bulk except one per
        parent folder, and those go last, one by one: whichever empties a folder deletes it. -#}
    {% for path in paths if not joinery._upsert_is_version_directory(root, path) %}
        {{ joinery._upsert_fail('refusing to delete ' ~ path ~ ', which is not a version directory under ' ~ root) }}
    {% endfor %}
    {% set janitor = joinery._upsert_work_table(relation, 'janitor') %}
    {% set bulk = [] %}
    {% set last_in_folder = {} %}
    {% for path in paths %}
        {% set folder = path.rstrip('/').rsplit('/', 1)[0] %}
        {% if folder == root or folder in last_in_folder %}
            {% do bulk.append(path) %}
        {% else %}
            {% do last_in_folder.update({folder: path}) %}
        {% endif %}
    {% endfor %}
    {% do joinery._upsert_janitor(janitor, bulk, 1) %}
    {#- Folder levels below the root: `v_<run id>/country=NL` is 2. -#}
    {% set by_levels = {} %}
    {% for path in last_in_folder.values() %}
        {% do by_levels.setdefault(path[root | length + 1:].strip('/').split('/') | length, []).append(path) %}
    {% endfor %}
    {% for levels, group in by_levels | dictsort %}
        {% do joinery._upsert_janitor(janitor, group, levels) %}
    {% endfor %}
{% endmacro %}


{% macro _upsert_janitor(janitor, paths, levels) %}
    {#- Spark SQL has no statement that deletes a directory, but the Hive metastore deletes the
        locations of a managed table's partitions. So `paths` become the partitions of a throwaway
        managed table `janitor` with `levels` partition columns:
        - one level: the table is dropped; the metastore deletes every partition location in one
          call. Three statements, however many paths.
        - more: its partitions are dropped first (one partial spec), then the table. The metastore
          deletes each partition's location and then each parent folder the drop left empty, up to
          `levels` - 1 levels up (HiveMetaStore.deleteParentRecursive): with as many levels as the
          path lies below the table's root, that stops at the version directory. -#}
    {% if paths | length == 0 %}
        {{ return(none) }}
    {% endif %}
    {% set columns = [] %}
    {% for level in range(1, levels + 1) %}
        {% do columns.append('joinery_level_' ~ level) %}
    {% endfor %}
    {% do run_query('create table ' ~ janitor ~ ' (unused int, ' ~ columns | join(' int, ') ~ ' int) using parquet'
        ~ ' partitioned by (' ~ columns | join(', ') ~ ')') %}
    {% set partitions = [] %}
    {% for path in paths %}
        {#- One level: the path's number. More: 1, the number, then 0s, so that one partial spec
            (`joinery_level_1 = 1`) drops them all. -#}
        {% set values = [loop.index] if levels == 1 else [1, loop.index] + [0] * (levels - 2) %}
        {% set spec = [] %}
        {% for column in columns %}
            {% do spec.append(column ~ ' = ' ~ values[loop.index0]) %}
        {% endfor %}
        {% do partitions.append('partition (' ~ spec | join(', ') ~ ') location ' ~ joinery._sql_string(path)) %}
    {% endfor %}
    {% do run_query('alter table ' ~ janitor ~ ' add ' ~ partitions | join(' ')) %}
    {% if levels > 1 %}
        {% do run_query('alter table ' ~ janitor ~ ' drop partition (joinery_level_1 = 1)') %}
    {% endif %}
    {% do run_query('drop table ' ~ janitor) %}
{% endmacro %}


{% macro _upsert_partition_spec(partition_columns, values) %}
    {#- `k` = '1', `d` = '2024-01-01': a partition spec from values read as strings (Spark casts a
        string in a partition spec to the column's type). -#}
    {% set parts = [] %}
    {% for column in partition_columns %}
        {% do parts.append(joinery._quote_identifier(column) ~ ' = ' ~ joinery._sql_string(values[loop.index0])) %}
    {% endfor %}
    {{ return(parts | join(', ')) }}
{% endmacro %}


{% macro _upsert_specs_of_values(partition_columns, partitions) %}
    {#- Partition specs of value lists, sorted. -#}
    {% set specs = [] %}
    {% for values in partitions %}
        {% do specs.append(joinery._upsert_partition_spec(partition_columns, values)) %}
    {% endfor %}
    {{ return(specs | sort) }}
{% endmacro %}


{% macro _upsert_partition_location(relation_sql, spec) %}
    {% for row in run_query('describe table extended ' ~ relation_sql ~ ' partition (' ~ spec ~ ')').rows
        if (row[0] or '') | trim == 'Location' %}
        {{ return(row[1] | trim) }}
    {% endfor %}
    {{ joinery._upsert_fail('no location for partition (' ~ spec ~ ') of ' ~ relation_sql) }}
{% endmacro %}


{% macro _upsert_written_partition_locations(relation_sql, location, partition_columns, partitions,
    lowercase_names=false) %}
    {#- Where each partition (a value list) of a table just written at `location` lives, by spec.
        Spark writes a partition to `<location>/<name>=<value>[/...]` and escapes only characters
        outside letters, digits and ` ._,+-`, so for names and values made of those the location
        is derived, and one derived location is checked against the metastore; if it differs, every
        partition is described. Other partitions are described. Hive lowercases column names
        (`lowercase_names`). -#}
    {% set plain = modules.re.compile('^[A-Za-z0-9 ._,+-]+$') %}
    {% set names = partition_columns | map('lower') | list if lowercase_names else partition_columns %}
    {% set derived = {} %}
    {% set described = {} %}
    {% for values in partitions %}
        {% set spec = joinery._upsert_partition_spec(partition_columns, values) %}
        {% set path = namespace(plain=true, parts=[]) %}
        {% for value in values %}
            {% if not (value is string and plain.match(value) and plain.match(names[loop.index0])) %}
                {% set path.plain = false %}
            {% endif %}
            {% set path.parts = path.parts + [names[loop.index0] ~ '=' ~ value] %}
        {% endfor %}
        {% if path.plain %}
            {% do derived.update({spec: location ~ '/' ~ path.parts | join('/')}) %}
        {% else %}
            {% do described.update({spec: joinery._upsert_partition_location(relation_sql, spec)}) %}
        {% endif %}
    {% endfor %}
    {% set checked = (derived | list | sort | first) if derived else none %}
    {% if checked is not none and joinery._upsert_partition_location(relation_sql, checked) != derived[checked] %}
        {{ log('joinery_upsert: ' ~ relation_sql ~ ' partition (' ~ checked ~ ') is not at the derived '
            ~ derived[checked] ~ '; describing every partition') }}
        {% for spec in derived | list %}
            {% do derived.update({spec: joinery._upsert_partition_location(relation_sql, spec)}) %}
        {% endfor %}
    {% endif %}
    {% do derived.update(described) %}
    {{ return(derived) }}
{% endmacro %}


{% macro _upsert_column_ddl(columns) %}
    {% set parts = [] %}
    {% for column in columns %}
        {% do parts.append(joinery._quote_identifier(column.name) ~ ' ' ~ column.type) %}
    {% endfor %}
    {{ return(parts | join(',\n    ')) }}
{% endmacro %}
