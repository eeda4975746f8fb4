{#- Private helpers of the joinery_upsert materialization: reading table metadata from Spark, and
    rendering the SQL literals, partition specs and DDL the commit protocol needs. -#}

{% macro upsert_describe(relation_sql) %}
    {#- Columns, partition columns, location, type and provider (file format) of a table (or the
        columns of a view), from one `describe table extended`, and a second one as JSON when a
        column holds a struct. -#}
    {% set rows = run_query('describe table extended ' ~ relation_sql).rows %}
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
        {% elif section.name == 'details' and key == 'Location' %}
            {% do info.update({'location': value}) %}
        {% elif section.name == 'details' and key == 'Type' %}
            {% do info.update({'type': value}) %}
        {% elif section.name == 'details' and key == 'Provider' %}
            {% do info.update({'provider': value | lower}) %}
        {% endif %}
    {% endfor %}
    {% set fixed = joinery.parseable_struct_types(relation_sql, info['columns'] | map(attribute='name') | list,
        info['columns'] | map(attribute='type') | list) %}
    {% for column in info['columns'] if column['name'] in fixed %}
        {% do column.update({'type': fixed[column['name']]}) %}
    {% endfor %}
    {{ return(info) }}
{% endmacro %}


{% macro upsert_table_properties(relation_sql) %}
    {#- The table's properties as a dict. -#}
    {% set properties = {} %}
    {% for row in run_query('show tblproperties ' ~ relation_sql).rows %}
        {% do properties.update({row[0]: row[1]}) %}
    {% endfor %}
    {{ return(properties) }}
{% endmacro %}


{% macro upsert_chunked_property(name, value) %}
    {#- `name` = value as a `set tblproperties` list, split over `name`, `name.1`, `name.2`, ... of at
        most 4000 characters each, then an empty `name.<n>` that ends it. The Hive metastore keeps a
        property value in a VARCHAR column (32672 characters in Spark's built-in Derby metastore,
        4000 in the Hive 2 schemas of some databases), and the journal of a commit that rewrites
        hundreds of partitions is longer than that. All parts go in one statement, one metastore
        call, so they change together. -#}
    {% set size = 4000 %}
    {% set text = value | string %}
    {% set parts = [joinery.sql_string(name) ~ ' = ' ~ joinery.sql_string(text[:size])] %}
    {% for start in range(size, text | length, size) %}
        {% do parts.append(joinery.sql_string(name ~ '.' ~ loop.index) ~ ' = '
            ~ joinery.sql_string(text[start:start + size])) %}
    {% endfor %}
    {% if text != '' %}
        {% do parts.append(joinery.sql_string(name ~ '.' ~ parts | length) ~ " = ''") %}
    {% endif %}
    {{ return(parts | join(', ')) }}
{% endmacro %}


{% macro upsert_read_chunked_property(properties, name) %}
    {#- The value upsert_chunked_property stored: `name`, then `name.1`, `name.2`, ... up to the first
        empty or missing part (parts beyond it are left over from an older, longer value). -#}
    {% set value = namespace(text=properties.get(name) or '', ended=false) %}
    {% for index in range(1, properties | length + 1) if value.text != '' and not value.ended %}
        {% set part = properties.get(name ~ '.' ~ index) or '' %}
        {% set value.text = value.text ~ part %}
        {% set value.ended = part == '' %}
    {% endfor %}
    {{ return(value.text) }}
{% endmacro %}


{% macro upsert_model_watermark(sql) %}
    {#- The watermark a macro in the model's SELECT annotated (`/* joinery.watermark {...} */`, e.g.
        compact's loaded_at): the commit stores it as table property `joinery.watermark`, so the next
        run reads it with one metastore call instead of scanning the table. '' when there is none
        or the annotations disagree (the next run then reads the watermark from the data). -#}
    {% set found = modules.re.findall('/\\* joinery\\.watermark (\\{.*?\\}) \\*/', sql) | unique | list %}
    {{ return(found[0] if found | length == 1 else '') }}
{% endmacro %}


{% macro upsert_watermark_to_derive(annotation) %}
    {#- For an annotation whose value is null (`{"column": ..., "value": null, "floor": ...}`: compact's
        full compactions, which cannot know the value before they run), what the commit stores instead:
        the newest value of `column` among the changed rows, at least `floor` (upsert_validate_changes
        reads it in its pass over them). {'column', 'floor', 'annotation': the parsed annotation};
        none when the annotation has its value, or there is none. -#}
    {% set parsed = fromjson(annotation) if annotation else none %}
    {% if parsed is not mapping or parsed.get('value') is not none or parsed.get('column') is not string %}
        {{ return(none) }}
    {% endif %}
    {{ return({'column': parsed['column'], 'floor': parsed['floor'] if parsed.get('floor') is string else none,
        'annotation': parsed}) }}
{% endmacro %}


{% macro upsert_derived_watermark(newest_of, newest) %}
    {#- The `joinery.watermark` a commit stores for an annotation to derive (upsert_watermark_to_derive):
        the annotation with `newest` as its value and without its floor; its other fields (compact's
        `snapshot`) as they are. '' when `newest` is none. -#}
    {% if newest is none %}
        {{ return('') }}
    {% endif %}
    {% set stored = {} %}
    {% for name, value in newest_of.annotation.items() if name not in ['value', 'floor'] %}
        {% do stored.update({name: value}) %}
    {% endfor %}
    {% do stored.update({'value': newest}) %}
    {{ return(tojson(stored)) }}
{% endmacro %}


{% macro upsert_store_unchanged_watermark(target_sql, properties, watermark_text) %}
    {#- A run that changed no row commits nothing, yet its SELECT read up to a watermark (and compact's
        may have compared a new snapshot in full and found nothing to change): store what the commit
        would have stored, with one property statement, so that the next run does not read the
        same rows or compare the same snapshot again. Only when it differs from the stored value. -#}
    {% set stored = properties.get('joinery.watermark') or '' %}
    {% if watermark_text == '' or (stored != '' and fromjson(stored) == fromjson(watermark_text)) %}
        {{ return(none) }}
    {% endif %}
    {% do run_query('alter table ' ~ target_sql ~ ' set tblproperties (' ~ joinery.sql_string('joinery.watermark')
        ~ ' = ' ~ joinery.sql_string(watermark_text) ~ ')') %}
{% endmacro %}


{% macro upsert_schema_location(schema) %}
    {% for row in run_query('describe schema extended ' ~ joinery.quote_identifier(schema)).rows
        if row[0] | trim == 'Location' %}
        {{ return(row[1] | trim) }}
    {% endfor %}
    {{ exceptions.raise_compiler_error('joinery_upsert: cannot find the location of schema ' ~ schema) }}
{% endmacro %}


{% macro upsert_rows_and_partitions_sql(sql, partition_columns) %}
    {#- A one-row SELECT of the rows of `sql`: `joinery_rows`, their count, and `joinery_partitions`,
        their distinct partitions (upsert_partition_list_sql; NULL when there are no partition
        columns). One scan, grouped by partition: a count beside a scalar subquery of the distinct
        partitions read the rows twice (0.81 s against 1.08 s for both sides of a partitioned run's
        check, medians of 9). -#}
    {% if not partition_columns %}
        {#- A plain count: a sum over a one-row count would add an aggregation and its exchange. -#}
        {{ return('select count(*) as joinery_rows, cast(null as string) as joinery_partitions\nfrom (\n'
            ~ sql ~ '\n)') }}
    {% endif %}
    {{ return('select coalesce(sum(n), 0) as joinery_rows, ' ~ joinery.upsert_partition_list_sql(partition_columns)
        ~ ' as joinery_partitions\nfrom (\n'
        ~ joinery.upsert_partition_rollup_sql(sql, partition_columns, ['count(*) as n']) ~ '\n)') }}
{% endmacro %}


{% macro upsert_partitions_and_versions_sql(relation_sql, partition_columns) %}
    {#- A one-row SELECT of a joinery table's partitions (`joinery_partitions`, as
        upsert_rows_and_partitions_sql) and the version directories holding them (`joinery_versions`,
        a JSON array of `v_<run id>` names under the table's root), from one scan that decodes no
        column of the files. A partition's files all lie in its location, so one file path per
        partition names its directory, and the name is parsed from that one path: a regex on every
        row's path took 3.2 s against 1.1 s for the 2M rows of the incremental compaction benchmark.
        The path's form (a percent-encoded URI) does not matter: a version directory's name has no
        character to encode, and it is the last such name before the partition's folders. A
        partition with no file names no directory (joinery writes none). The path's alias has
        spaces, so no partition column (an identifier) can take it. -#}
    {% set names = joinery.quoted_column_list(partition_columns) %}
    {% set version = "regexp_extract(joinery_file_path, "
        ~ "'/(v_[0-9]+_[0-9a-f]+|v=[0-9]+_[0-9a-f]+)/([^/]+=[^/]*/)*[^/]+$', 1)" %}
    {{ return('select ' ~ joinery.upsert_partition_list_sql(partition_columns)
        ~ ' as joinery_partitions,\n'
        ~ '    to_json(array_sort(array_remove(array_distinct(collect_list(' ~ version ~ ")), ''))) as joinery_versions\n"
        ~ 'from (\n' ~ joinery.upsert_partition_rollup_sql('select ' ~ names ~ ', input_file_name() as `joinery file path` from '
            ~ relation_sql, partition_columns, ['max(`joinery file path`) as joinery_file_path']) ~ '\n)') }}
{% endmacro %}


{% macro upsert_partition_rollup_sql(sql, partition_columns, aggregates) %}
    {#- The rows of `sql` grouped by partition: the partition values as strings
        (`joinery_partition_1`, ...) and `aggregates` (SQL expressions with their aliases); one row in
        all without partition columns. Grouped by the expressions, not their aliases: a column of
        `sql` named like an alias would win over it. -#}
    {% set casts = joinery.upsert_partition_casts(partition_columns) %}
    {% set selected = [] %}
    {% for cast_sql in casts %}
        {% do selected.append(cast_sql ~ ' as joinery_partition_' ~ loop.index) %}
    {% endfor %}
    {{ return('select ' ~ (selected + aggregates) | join(', ') ~ '\nfrom (\n' ~ sql ~ '\n)'
        ~ ('\ngroup by ' ~ casts | join(', ') if casts else '')) }}
{% endmacro %}


{% macro upsert_partition_list_sql(partition_columns) %}
    {#- Over upsert_partition_rollup_sql's rows: the partitions as a JSON array of value lists (values
        as strings, NULL as null), sorted. -#}
    {% set names = [] %}
    {% for column in partition_columns %}
        {% do names.append('joinery_partition_' ~ loop.index) %}
    {% endfor %}
    {{ return('to_json(array_sort(collect_list(array(' ~ names | join(', ') ~ '))))') }}
{% endmacro %}


{% macro upsert_partition_casts(partition_columns) %}
    {#- The partition columns read as strings, the form every partition value list holds. -#}
    {% set casts = [] %}
    {% for column in partition_columns %}
        {% do casts.append('cast(' ~ joinery.quote_identifier(column) ~ ' as string)') %}
    {% endfor %}
    {{ return(casts) }}
{% endmacro %}


{% macro upsert_parse_partition_values(text, partition_columns, allow_null=false) %}
    {#- A JSON array of partition value lists, as upsert_partition_list_sql writes it. A NULL value
        fails unless `allow_null`: partition columns of a joinery_upsert model must not be NULL. -#}
    {% set partitions = fromjson(text or '[]') %}
    {% for values in partitions if not allow_null %}
        {% for column in partition_columns if values[loop.index0] is none %}
            {{ exceptions.raise_compiler_error('joinery_upsert: partition column `' ~ column
                ~ '` is NULL for some rows (an empty string is one too: Spark stores it as the NULL partition); '
                ~ 'partition columns of a joinery_upsert model must not be NULL') }}
        {% endfor %}
    {% endfor %}
    {{ return(partitions) }}
{% endmacro %}


{% macro upsert_partition_spec(partition_columns, values) %}
    {#- `k` = '1', `d` = '2024-01-01': a partition spec from values read as strings (Spark casts a
        string in a partition spec to the column's type). -#}
    {% set parts = [] %}
    {% for column in partition_columns %}
        {% do parts.append(joinery.quote_identifier(column) ~ ' = '
            ~ joinery.sql_string(values[loop.index0])) %}
    {% endfor %}
    {{ return(parts | join(', ')) }}
{% endmacro %}


{% macro upsert_specs_of_values(partition_columns, partitions) %}
    {#- Partition specs of value lists, sorted. -#}
    {% set specs = [] %}
    {% for values in partitions %}
        {% do specs.append(joinery.upsert_partition_spec(partition_columns, values)) %}
    {% endfor %}
    {{ return(specs | sort) }}
{% endmacro %}


{% macro upsert_partition_predicate(columns, partitions, alias=none) %}
    {#- ((`k` = cast('1' as int) and `d` = cast('x' as date)) or ...): the rows of the given
        partitions, each a list of values read as strings in the order of `columns` (name and type
        of each partition column); `false` for none. Literal, so Spark prunes partitions before it
        lists files. A partition with a NULL value is left out: `=` matches no row with it. -#}
    {% set terms = [] %}
    {% for values in partitions if none not in values %}
        {% set parts = [] %}
        {% for column in columns %}
            {% do parts.append((alias ~ '.' if alias else '') ~ joinery.quote_identifier(column.name)
                ~ ' = ' ~ joinery.typed_literal(values[loop.index0], column.type)) %}
        {% endfor %}
        {% do terms.append('(' ~ parts | join(' and ') ~ ')') %}
    {% endfor %}
    {{ return('(' ~ terms | join(' or ') ~ ')' if terms else 'false') }}
{% endmacro %}


{% macro upsert_partition_location(relation_sql, spec) %}
    {% for row in run_query('describe table extended ' ~ relation_sql ~ ' partition (' ~ spec ~ ')').rows
        if (row[0] or '') | trim == 'Location' %}
        {{ return(row[1] | trim) }}
    {% endfor %}
    {{ exceptions.raise_compiler_error('joinery_upsert: no location for partition (' ~ spec ~ ') of '
        ~ relation_sql) }}
{% endmacro %}


{% macro upsert_written_partition_locations(relation_sql, location, partition_columns, partitions,
    lowercase_names=false) %}
    {#- Where each partition (a value list) of a table just written at `location` lives, by spec.
        Spark writes a partition to `<location>/<name>=<value>[/...]` and escapes only characters
        outside letters, digits and ` ._,+-`, so for names and values made of those the location
        is derived (one describe per partition was 0.1 s each: 10 s of a 100-partition build).
        One derived location is checked against the metastore; if it differs, every partition is
        described. Other partitions are described. Hive lowercases column names
        (`lowercase_names`). -#}
    {% set plain = modules.re.compile('^[A-Za-z0-9 ._,+-]+$') %}
    {% set names = partition_columns | map('lower') | list if lowercase_names else partition_columns %}
    {% set derived = {} %}
    {% set described = {} %}
    {% for values in partitions %}
        {% set spec = joinery.upsert_partition_spec(partition_columns, values) %}
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
            {% do described.update({spec: joinery.upsert_partition_location(relation_sql, spec)}) %}
        {% endif %}
    {% endfor %}
    {% set checked = (derived | list | sort | first) if derived else none %}
    {% if checked is not none and joinery.upsert_partition_location(relation_sql, checked) != derived[checked] %}
        {{ log('joinery_upsert: ' ~ relation_sql ~ ' partition (' ~ checked ~ ') is not at the derived '
            ~ derived[checked] ~ '; describing every partition') }}
        {% for spec in derived | list %}
            {% do derived.update({spec: joinery.upsert_partition_location(relation_sql, spec)}) %}
        {% endfor %}
    {% endif %}
    {% do derived.update(described) %}
    {{ return(derived) }}
{% endmacro %}


{% macro upsert_column_ddl(columns) %}
    {% set parts = [] %}
    {% for column in columns %}
        {% do parts.append(joinery.quote_identifier(column.name) ~ ' ' ~ column.type) %}
    {% endfor %}
    {{ return(parts | join(',\n    ')) }}
{% endmacro %}


{% macro upsert_storage_clause(settings, staging=false) %}
    {#- using <format> [options (...)] [partitioned by (...)] for the target and its staging tables.
        A staging table of a data source format (parquet, orc) writes no `_SUCCESS` marker into the
        version directory (Spark passes a table's options to its writer's Hadoop configuration), so
        the directory is left empty once its partitions are deleted and the clean-up removes it
        (upsert_delete_directories). Hive SerDe inserts write no marker. -#}
    {% set clause = 'using ' ~ settings.file_format %}
    {% set options = [] %}
    {% for key, value in settings.options.items() %}
        {% do options.append(joinery.sql_string(key) ~ ' = ' ~ joinery.sql_string(value)) %}
    {% endfor %}
    {% if staging and settings.file_format != 'hive' %}
        {% do options.append(joinery.sql_string('mapreduce.fileoutputcommitter.marksuccessfuljobs') ~ " = 'false'") %}
    {% endif %}
    {% if options %}
        {% set clause = clause ~ '\noptions (' ~ options | join(', ') ~ ')' %}
    {% endif %}
    {% if settings.partition_by %}
        {% set clause = clause ~ '\npartitioned by (' ~ joinery.quoted_column_list(settings.partition_by) ~ ')' %}
    {% endif %}
    {{ return(clause) }}
{% endmacro %}


{% macro upsert_options_text(settings) %}
    {#- The options a Hive SerDe table is built with, as stored in `joinery.options`: keys in lower
        case (Spark reads them so) and sorted, and the fileFormat's name in lower case. '' for other
        formats, whose options (compression, ...) do not change what reads their files. -#}
    {% if settings.file_format != 'hive' %}
        {{ return('') }}
    {% endif %}
    {% set normalized = {} %}
    {% for key, value in settings.options.items() %}
        {% do normalized.update({key | lower: value | lower if key | lower == 'fileformat' else value}) %}
    {% endfor %}
    {{ return(tojson(normalized, sort_keys=true)) }}
{% endmacro %}


{% macro upsert_qualified_location(relation, location, unless_qualified=false) %}
    {#- `location` as the metastore spells it (`file:/mnt/lake`, `hdfs://namenode:8020/lake`). The
        metastore normalizes a path when it stores it (`/mnt/lake`, `file:///mnt/lake/` and
        `hdfs:///lake` are all spelled otherwise), so every later comparison of the path as written
        with a location it reports failed: which directories are this table's versions (superseded
        ones were never deleted) and the derived partition locations (every partition was
        described). Three statements: a throwaway external table at the path, described, dropped
        (an external table's files stay). `unless_qualified`: a path with a scheme is returned as it
        is (a root joinery stored, which it qualified first). -#}
    {% if unless_qualified and modules.re.match('^[A-Za-z][A-Za-z0-9+.-]*:', location) %}
        {{ return(location) }}
    {% endif %}
    {% set probe = joinery.upsert_work_table(relation, 'probe') %}
    {% do run_query('create table ' ~ probe ~ ' (unused int) using parquet location ' ~ joinery.sql_string(location)) %}
    {% set qualified = joinery.upsert_describe(probe)['location'] %}
    {% do run_query('drop table ' ~ probe) %}
    {{ return(qualified) }}
{% endmacro %}


{% macro upsert_version_directory(root, run_id) %}
    {#- Where a run writes its version: `v_<run id>` under the table's root. Not `_v...` or `.v...`:
        Hadoop's FileInputFormat, which Hive SerDe tables read through, skips such paths, the table
        location included. No `=` in the name: Hive's dynamic-partition load reads every `name=value`
        folder of the written path as a partition, so a partitioned Hive table failed its inserts. -#}
    {{ return(root ~ '/v_' ~ run_id) }}
{% endmacro %}


{% macro upsert_is_version_directory(root, path) %}
    {#- A directory joinery may delete: a version directory of this table's root, or a partition in
        one. `v=<run id>` is the layout of joinery before 0.1.0 was released; tables built then still
        carry such directories in their journal. -#}
    {{ return(path is string and (path.startswith(root ~ '/v_') or path.startswith(root ~ '/v='))) }}
{% endmacro %}


{% macro upsert_work_table(relation, suffix) %}
    {#- The name of this run's work table `<table>__joinery_<suffix>` (the stage, the janitor), after
        dropping one that a killed run left. dbt's relation cache listed the schema's tables at the
        start of the invocation, so when there is none this costs no statement: a `drop table if
        exists` was a metastore round trip per work table and run. Each use ends by dropping the
        table, so a second use in the same run finds none either. -#}
    {% set identifier = relation.identifier ~ '__joinery_' ~ suffix %}
    {% set leftover = adapter.get_relation(database=relation.database, schema=relation.schema,
        identifier=identifier) %}
    {% if leftover is not none %}
        {% do adapter.drop_relation(leftover) %}
    {% endif %}
    {{ return(relation.schema ~ '.' ~ identifier) }}
{% endmacro %}


{% macro upsert_delete_directories(relation, root, paths) %}
    {#- Delete version directories of this table's root, or partition directories in them, and each
        folder that deleting them leaves empty, up to the version directory (never the root).
        Deleting in bulk is one metastore call for any number of directories, but leaves their
        parent folders; dropping a directory as a partition deletes the parents it empties, at a
        metastore call per directory (upsert_janitor). So the directories go in bulk except one per
        parent folder, and those go last, one by one: whichever empties a folder deletes it. After a
        full rebuild of N partitions written by one run, that is N - 1 in bulk and one by one.
        Only version directories of this table's root, and partitions in them, are ever deleted. -#}
    {% for path in paths if not joinery.upsert_is_version_directory(root, path) %}
        {{ exceptions.raise_compiler_error('joinery_upsert: refusing to delete ' ~ path
            ~ ', which is not a version directory under ' ~ root) }}
    {% endfor %}
    {% set janitor = joinery.upsert_work_table(relation, 'janitor') %}
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
    {% do joinery.upsert_janitor(janitor, bulk, 1) %}
    {#- Folder levels below the root: `v_<run id>/country=NL` is 2. -#}
    {% set by_levels = {} %}
    {% for path in last_in_folder.values() %}
        {% do by_levels.setdefault(path[root | length + 1:].strip('/').split('/') | length, []).append(path) %}
    {% endfor %}
    {% for levels, group in by_levels | dictsort %}
        {% do joinery.upsert_janitor(janitor, group, levels) %}
    {% endfor %}
{% endmacro %}


{% macro upsert_janitor(janitor, paths, levels) %}
    {#- Spark SQL has no statement that deletes a directory, but the Hive metastore deletes the
        locations of a managed table's partitions. So `paths` become the partitions of a throwaway
        managed table `janitor` with `levels` partition columns:
        - one level: the table is dropped; the metastore deletes every partition location in one
          call. Three statements, however many paths.
        - more: its partitions are dropped first (one partial spec), then the table. The metastore
          deletes each partition's location and then each parent folder the drop left empty, up to
          `levels` - 1 levels up (HiveMetaStore.deleteParentRecursive): with as many levels as the
          path lies below the table's root, that stops at the version directory. Four statements,
          and a metastore call per path. -#}
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
        {% do partitions.append('partition (' ~ spec | join(', ') ~ ') location ' ~ joinery.sql_string(path)) %}
    {% endfor %}
    {% do run_query('alter table ' ~ janitor ~ ' add ' ~ partitions | join(' ')) %}
    {% if levels > 1 %}
        {% do run_query('alter table ' ~ janitor ~ ' drop partition (joinery_level_1 = 1)') %}
    {% endif %}
    {% do run_query('drop table ' ~ janitor) %}
{% endmacro %}
