{#- The model holds exactly the rows of `expected`, as a multiset (duplicates count), compared on
    `columns` (default: the columns of `expected`). Failing rows say which side has them. Values are
    compared exactly: maps and variants (which Spark cannot compare) as JSON text, collated strings
    in the binary collation (_comparable_sql). -#}
{% test equal_rows(model, expected, columns=none) %}
    {% set expected_columns = joinery._columns_of(expected, required=false) if expected is not none else [] %}
    {% set compare = joinery._equal_rows_columns(expected, columns, expected_columns) %}
    {% set model_columns = joinery._columns_of(model, required=false) %}

    with

    actual_rows as (
        select {{ joinery._comparable_select_sql(model_columns, compare) }} from {{ model }}
    ),

    expected_rows as (
        select {{ joinery._comparable_select_sql(expected_columns, compare) }} from {{ expected }}
    ),

    missing as (
        select * from expected_rows
        except all
        select * from actual_rows
    ),

    unexpected as (
        select * from actual_rows
        except all
        select * from expected_rows
    )

    select
        'missing from model' as joinery_diff,
        *
    from missing
    union all
    select
        'unexpected in model' as joinery_diff,
        *
    from unexpected
{% endtest %}
