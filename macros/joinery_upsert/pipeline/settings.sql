{#- The model's joinery_upsert config, validated before anything runs, and what the materialization
    applies of dbt's own configs (contract, tblproperties, persist_docs). -#}

{% macro _upsert_settings(plan=none) %}
    {#- The model's joinery_upsert config, validated: unique_key, deleted_column, partition_by,
        file_format, options, commit (the commit path), on_schema_change, tombstones, rebuild_threshold,
        skip_unchanged, write_order, rows_per_file, file_bytes. `plan`: the run's plan, when a
        capability planned it (contract/plan.sql). -#}
    {% set unique_key = config.get('unique_key') %}
    {% if unique_key is none or unique_key == [] or unique_key == '' %}
        {{ joinery._upsert_argument_error('unique_key', unique_key,
            'joinery_upsert needs unique_key: the column (or list of columns) that identifies a row') }}
    {% endif %}
    {% set keys = joinery._upsert_column_list('unique_key', unique_key) %}
    {% set deleted_column = config.get('deleted_column', '_joinery_deleted') %}
    {% if deleted_column is not string or not modules.re.match('^[A-Za-z_][A-Za-z0-9_]*$', deleted_column) %}
        {{ joinery._upsert_argument_error('deleted_column', deleted_column,
            'expected an identifier: letters, digits and underscores, not starting with a digit') }}
    {% endif %}
    {#- dbt-spark table configs joinery_upsert does not apply: an error, not a table without them. -#}
    {% for name in ['clustered_by', 'buckets'] if config.get(name) is not none %}
        {{ joinery._upsert_argument_error(name, config.get(name), 'joinery_upsert does not write bucketed '
            ~ "tables (each run writes new files for the touched partitions only); leave it unset, or use "
            ~ "materialized='table'") }}
    {% endfor %}
    {#- dbt's default `ignore` is taken as joinery's own behaviour (new columns are added, removed ones
        kept): the two cannot be told apart, as dbt fills in the default. -#}
    {% set on_schema_change = config.get('on_schema_change') or 'ignore' %}
    {% if on_schema_change not in ['ignore', 'append_new_columns', 'fail'] %}
        {{ joinery._upsert_argument_error('on_schema_change', on_schema_change,
            "expected 'append_new_columns' (joinery_upsert's behaviour, also under dbt's default 'ignore') or "
            ~ "'fail'; columns cannot be dropped in place from a parquet table: use --full-refresh") }}
    {% endif %}
    {% set settings = {'unique_key': keys, 'deleted_column': deleted_column,
        'partition_by': joinery._upsert_settings_partition_by(), 'on_schema_change': on_schema_change,
        'tombstones': joinery._upsert_settings_tombstones(), 'rebuild_threshold': joinery._upsert_settings_rebuild(),
        'skip_unchanged': joinery._upsert_settings_skip_unchanged(plan)} %}
    {% do settings.update(joinery._upsert_settings_storage()) %}
    {% do settings.update(joinery._upsert_settings_layout(settings)) %}
    {{ return(settings) }}
{% endmacro %}


{% macro _upsert_column_list(argument, value) %}
    {#- A config naming one column or a list of them, as a list. -#}
    {% if value is string %}
        {{ return([value]) }}
    {% endif %}
    {% if value is not iterable or value is mapping or value | length == 0 %}
        {{ joinery._upsert_argument_error(argument, value, 'expected a column name or a list of column names') }}
    {% endif %}
    {{ return(value | list) }}
{% endmacro %}


{% macro _upsert_settings_partition_by() %}
    {#- The partition_by config as a list of identifiers. -#}
    {% set partition_by = config.get('partition_by') %}
    {% set partitions = joinery._upsert_column_list('partition_by', partition_by) if partition_by is not none else [] %}
    {% for name in partitions if not modules.re.match('^[A-Za-z_][A-Za-z0-9_]*$', name | string) %}
        {#- Spark writes such a table, but the Hive metastore cannot parse a partition filter on it
            (`Error parsing partition filter`), which every incremental run needs. -#}
        {{ joinery._upsert_argument_error('partition_by', name, 'a partition column of a joinery_upsert '
            ~ 'table must be named by an identifier (letters, digits and underscores, not starting with a digit): '
            ~ 'the Hive metastore cannot filter partitions on other names; rename it in the SELECT') }}
    {% endfor %}
    {{ return(partitions) }}
{% endmacro %}


{% macro _upsert_settings_tombstones() %}
    {#- The tombstones config as a list of identifiers (the columns that order a key's versions,
        tombstones.sql), none when unset. compact sets it in the models it feeds. -#}
    {% set value = config.get('tombstones') %}
    {% if value is none or value == '' %}
        {{ return(none) }}
    {% endif %}
    {% set names = joinery._upsert_column_list('tombstones', value) %}
    {% for name in names if not (name is string and modules.re.match('^[A-Za-z_][A-Za-z0-9_]*$', name)) %}
        {{ joinery._upsert_argument_error('tombstones', value, 'expected the column names (identifiers) that order a '
            ~ "key's versions, e.g. ['updated_at', 'loaded_at']") }}
    {% endfor %}
    {{ return(names) }}
{% endmacro %}


{% macro _upsert_settings_skip_unchanged(plan=none) %}
    {#- The skip_unchanged config: whether a MERGE leaves a matched row equal to its change as it is.
        Default true where the SELECT may yield unchanged rows; false where its rows say what changed:
        a change-feed model (its plan pins feed versions) and a model whose versions joinery_upsert
        keeps (config tombstones: compact, which compares its new versions with the table's rows
        itself). The comparison reads every column of the files a MERGE touches. -#}
    {% set value = config.get('skip_unchanged') %}
    {% if value is none %}
        {{ return(not ((plan or {}).get('feeds') or config.get('tombstones'))) }}
    {% elif value is not boolean %}
        {{ joinery._upsert_argument_error('skip_unchanged', value, 'expected true (leave a row equal to its change '
            ~ 'as it is; default) or false (update every matched row: a cheaper MERGE on wide delta tables)') }}
    {% endif %}
    {{ return(value) }}
{% endmacro %}


{% macro _upsert_settings_storage() %}
    {#- {'file_format', 'options', 'commit'}: how the table stores its files, and its commit path
        (_upsert_commit_path), validated together. -#}
    {% set file_format = (config.get('file_format') or 'parquet') | lower %}
    {% set allowed_formats = ['parquet', 'orc', 'hive', 'delta', 'iceberg'] %}
    {% if file_format not in allowed_formats %}
        {{ joinery._upsert_argument_error('file_format', file_format, 'expected one of ' ~ tojson(allowed_formats)) }}
    {% endif %}
    {% set options = config.get('options') or {} %}
    {% if options is not mapping %}
        {{ joinery._upsert_argument_error('options', options, "expected a mapping, e.g. {'fileFormat': 'avro'}") }}
    {% endif %}
    {% if file_format == 'hive' and not options %}
        {#- Without a fileFormat, Spark writes Hive text files, which cannot hold nested types or NULLs
            distinct from empty strings faithfully. -#}
        {{ joinery._upsert_argument_error('options', options,
            "file_format 'hive' needs options={'fileFormat': ...}, e.g. {'fileFormat': 'avro'}") }}
    {% endif %}
    {{ return({'file_format': file_format, 'options': options, 'commit': joinery._upsert_commit_path(file_format)}) }}
{% endmacro %}


{% macro _upsert_assert_contract(sql, settings) %}
    {#- An enforced model contract, checked as dbt's `table` checks it (names and types of the SELECT
        against the model's yml columns), before anything is written. The delete marker column is
        not part of the table, so it is not part of the contract. -#}
    {% set contract = config.get('contract') %}
    {% if not (contract and contract.enforced) %}
        {{ return(none) }}
    {% endif %}
    {#- Its constraints too: one a format cannot enforce stops the run here (constraints.sql). -#}
    {% do joinery._upsert_constraints(settings) %}
    {% set names = [] %}
    {% for column in get_column_schema_from_query(sql) if column.name | lower != settings.deleted_column | lower %}
        {% do names.append(joinery._quote_identifier(column.name)) %}
    {% endfor %}
    {% do get_assert_columns_equivalent('select ' ~ names | join(', ') ~ ' from (\n' ~ sql ~ '\n)') %}
{% endmacro %}


{% macro _upsert_model_properties() %}
    {#- {name: value}: the model's `tblproperties`, and its description as the table comment under
        persist_docs.relation. joinery writes its own DDL: a full build on delta or iceberg creates the
        table with them, other runs set those that differ (_upsert_apply_properties). -#}
    {% set properties = config.get('tblproperties') or {} %}
    {% if properties is not mapping %}
        {{ joinery._upsert_argument_error('tblproperties', properties, "expected a mapping, e.g. {'owner': 'data'}") }}
    {% endif %}
    {% set found = {} %}
    {% for name, value in properties.items() %}
        {% if (name | string | lower).startswith('joinery.') %}
            {{ joinery._upsert_argument_error('tblproperties', name,
                "names starting with 'joinery.' are joinery's own") }}
        {% endif %}
        {% do found.update({name | string: value | string}) %}
    {% endfor %}
    {% if (config.get('persist_docs') or {}).get('relation') and model.description %}
        {% do found.update({'comment': model.description}) %}
    {% endif %}
    {{ return(found) }}
{% endmacro %}


{% macro _upsert_apply_properties(target, current=none) %}
    {#- Set the model's properties (_upsert_model_properties) that the table does not hold yet, in one
        statement, and none when it holds them all: a commit of its own only when the config changed.
        `current`: the table's properties when the run read them already. -#}
    {% set wanted = joinery._upsert_model_properties() %}
    {% if not wanted %}
        {{ return(none) }}
    {% endif %}
    {% set current = current if current is not none else joinery._table_properties(target.render()) %}
    {% set assignments = [] %}
    {% for name, value in wanted | dictsort if current.get(name) != value %}
        {% do assignments.append(joinery._sql_string(name) ~ ' = ' ~ joinery._sql_string(value)) %}
    {% endfor %}
    {% if assignments %}
        {% do run_query('alter table ' ~ target.render() ~ ' set tblproperties (' ~ assignments | join(', ') ~ ')') %}
    {% endif %}
{% endmacro %}


{% macro _upsert_storage_clause(settings, staging=false, write_options={}) %}
    {#- using <format> [options (...)] [partitioned by (...)] for the target and its staging tables.
        A staging table of a data source format (parquet, orc) writes no `_SUCCESS` marker into the
        version directory (Spark passes a table's options to its writer's Hadoop configuration), so
        the directory is left empty once its partitions are deleted and the clean-up removes it
        (_upsert_delete_directories). Hive SerDe inserts write no marker. -#}
    {% set clause = 'using ' ~ settings.file_format %}
    {% set options = [] %}
    {% for key, value in settings.options.items() | list + write_options.items() | list %}
        {% do options.append(joinery._sql_string(key) ~ ' = ' ~ joinery._sql_string(value)) %}
    {% endfor %}
    {% if staging and settings.file_format != 'hive' %}
        {% do options.append(joinery._sql_string('mapreduce.fileoutputcommitter.marksuccessfuljobs') ~ " = 'false'") %}
    {% endif %}
    {% if options %}
        {% set clause = clause ~ '\noptions (' ~ options | join(', ') ~ ')' %}
    {% endif %}
    {% if settings.partition_by %}
        {% set clause = clause ~ '\npartitioned by (' ~ joinery._quoted_column_list(settings.partition_by) ~ ')' %}
    {% endif %}
    {{ return(clause) }}
{% endmacro %}


{% macro _upsert_settings_layout(settings) %}
    {#- How a delta or iceberg full build lays out its rows: {'write_order': the columns it sorts
        them by (config write_order: the unique_key by default, a list of columns, or none), and the
        size of its files: 'rows_per_file' (delta, config rows_per_file, default 250000) and
        'file_bytes' (iceberg's write.target-file-size-bytes, default 16 MB, unless tblproperties
        sets it)}. Files in key order, each holding one key slice, let a MERGE read only the files its
        changes fall in; smaller files narrow that further, at a cost to every reader per file
        (docs/upsert.md, "Table layout"). parquet, orc and Hive tables keep the SELECT's order. -#}
    {% if settings.commit != 'merge' %}
        {{ return({'write_order': [], 'rows_per_file': none, 'file_bytes': none}) }}
    {% endif %}
    {% set order = config.get('write_order', 'unique_key') %}
    {% if order == 'unique_key' %}
        {% set order = settings.unique_key %}
    {% elif order is none or order == 'none' %}
        {% set order = [] %}
    {% else %}
        {% set order = joinery._upsert_column_list('write_order', order) %}
    {% endif %}
    {% set rows = config.get('rows_per_file', 250000) %}
    {% if rows is not number or rows is boolean or rows < 1 %}
        {{ joinery._upsert_argument_error('rows_per_file', rows, 'expected a positive number of rows (delta files '
            ~ 'written by a full build hold at most that many; default 250000)') }}
    {% endif %}
    {% set own = (config.get('tblproperties') or {}).get('write.target-file-size-bytes') %}
    {{ return({'write_order': order, 'rows_per_file': rows | int if settings.file_format == 'delta' else none,
        'file_bytes': 16 * 1024 * 1024 if settings.file_format == 'iceberg' and own is none else none}) }}
{% endmacro %}


{% macro _upsert_write_options(settings) %}
    {#- The writer options of a delta full build (OPTIONS of its `create or replace`, not kept as table
        properties): its rows per file. -#}
    {{ return({'maxRecordsPerFile': settings.rows_per_file | string} if settings.rows_per_file else {}) }}
{% endmacro %}
